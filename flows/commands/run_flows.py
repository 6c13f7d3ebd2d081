"""CLI commands that run the Prefect flows in-process (no server needed):
``pipeline``, ``distill``, ``train sft|rl``, ``evaluate``, and ``deploy`` for a server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from flows.params import PipelineParams

REPO_ROOT = Path(__file__).resolve().parents[2]


def _prefect_env() -> None:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def _overrides(items: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"--set {item!r}: expected KEY=VALUE, e.g. train.lr=1e-6")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _preflight(preset: str, overrides: dict[str, Any] | None = None, harnesses: list[str] | None = None) -> None:
    """Refuse a bad preset, override, harness or task DB before Prefect starts or a model loads
    (each raises a user error that ``flows/errors.py`` prints as one line)."""
    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.db import make_engine

    load_preset(preset, overrides)
    if harnesses:
        from environments.harnesses.registry import get_harness

        for name in harnesses:
            get_harness(name)
    engine = make_engine(get_settings().db_url)
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()


def _emit(doc: dict[str, Any], json_out: bool) -> None:
    if json_out:
        sys.stdout.write(json.dumps(doc, default=str) + "\n")


def pipeline_cmd(
    preset: Annotated[str, typer.Option(help="Preset for every stage (configs/).")] = "local",
    rl_steps: Annotated[Optional[int], typer.Option(help="GRPO steps (default: the preset's; 0 skips GRPO).")] = None,
    n_rl_tasks: Annotated[int, typer.Option(help="RL training tasks.")] = PipelineParams().n_rl_tasks,
    n_sft_tasks: Annotated[int, typer.Option(help="SFT tasks.")] = PipelineParams().n_sft_tasks,
    eval_tasks: Annotated[int, typer.Option(help="Held-out evaluation tasks.")] = PipelineParams().eval_tasks,
    eval_samples: Annotated[int, typer.Option(help="Rollouts per held-out task and checkpoint.")] = PipelineParams().eval_samples,
    family: Annotated[str, typer.Option(help="Procedural claw family ('all': every claw family).")] = "contact-lookup",
    teacher: Annotated[str, typer.Option(help="'oracle', 'local' or a URL.")] = "oracle",
    seed: Annotated[int, typer.Option(help="Synthesis seed.")] = 7,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Preset override KEY=VALUE (repeatable).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Run every stage again; by default a stage whose inputs "
                                        "(tasks, checkpoint, preset keys) are unchanged reuses its earlier result.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """The main job: synthesize → distill → SFT → evaluate → GRPO → evaluate, end to end.

    Re-running the same command resumes: stages whose inputs did not change are reused."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    overrides = _overrides(set_)
    _preflight(preset, overrides)
    _prefect_env()
    from flows import progress as flow_progress
    from flows.pipeline import STAGES, pipeline_flow
    from storage.admin import init_home

    init_home()
    console = Console(stderr=True)
    params = PipelineParams(preset=preset, rl_steps=rl_steps, n_rl_tasks=n_rl_tasks, n_sft_tasks=n_sft_tasks,
                            eval_tasks=eval_tasks, eval_samples=eval_samples, family=None if family == "all" else family,
                            teacher=teacher, seed=seed, overrides=overrides, fresh=fresh)
    t0 = time.perf_counter()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as bar:
        job = bar.add_task("starting Prefect", total=len(STAGES))

        def report(name: str, index: int, total: int) -> None:
            bar.update(job, completed=index - 1, description=name)
            if not console.is_terminal:  # a CI log, nohup, a worker: plain lines instead of a bar
                console.print(f"[{time.perf_counter() - t0:6.0f}s] stage {index}/{total}: {name}")

        flow_progress.set_reporter(report)
        try:
            summary = asyncio.run(pipeline_flow(params))
        finally:
            flow_progress.set_reporter(None)
        bar.update(job, completed=len(STAGES), description="done")
    seconds = time.perf_counter() - t0
    summary["wall_seconds"] = seconds
    if json_out:
        _emit(summary, True)
        return
    table = Table(title="OpenForge pipeline: held-out reward (react harness), mean ± standard error over n rollouts")
    for column in ("stage", "n", "mean ± SE", "gain ± SE", "> 2 SE", "updates", "samples trained", "note"):
        table.add_column(column, justify="left" if column in ("stage", "note") else "right")
    for row in summary["stages"]:
        gain = f"{row['gain']:+.3f} ± {row['gain_se']:.3f}" if "gain" in row else "-"
        table.add_row(row["stage"], str(row["n"]), f"{row['mean_reward']:.3f} ± {row['stderr']:.3f}", gain,
                      ("yes" if row["clear"] else "no") if "gain" in row else "-",
                      "-" if row["updates"] is None else str(row["updates"]),
                      "-" if row["samples_trained"] is None else str(row["samples_trained"]), row["note"])
    console.print(table)
    if summary.get("reused"):
        console.print(f"reused from an earlier run (same inputs; --fresh runs them again): {', '.join(summary['reused'])}")
    if summary.get("rl"):
        steps = Table(title="GRPO steps (train reward)")
        for column in ("step", "reward", "samples", "zero_var_groups", "updates", "loss"):
            steps.add_column(column, justify="right")
        for s in summary["rl"]["steps"]:
            steps.add_row(*(str(s[c]) for c in ("step", "reward", "samples", "zero_var_groups", "updates", "loss")))
        console.print(steps)
    console.print("artifacts:")
    for path in (summary["sft"]["curve_png"], (summary.get("rl") or {}).get("curve_png"), summary["radar_png"],
                 (summary.get("rl") or summary["sft"])["checkpoint"]):
        if path:
            console.print(f"  {path}")
    console.print(f"[bold]pipeline finished in {seconds / 60:.1f} min[/]")


def distill_cmd(
    preset: Annotated[str, typer.Option(help="Preset.")] = "local",
    teacher: Annotated[str, typer.Option(help="'oracle', 'local' or a URL.")] = "oracle",
    n_per_task: Annotated[int, typer.Option(help="Teacher rollouts per task.")] = 3,
    domain: Annotated[str, typer.Option(help="Task domain.")] = "claw",
    purpose: Annotated[str, typer.Option(help="Task purpose.")] = "sft",
    max_tasks: Annotated[Optional[int], typer.Option(help="At most this many tasks.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Teacher rollouts → filtered SFT data (JSONL + Parquet)."""
    _preflight(preset)
    _prefect_env()
    from flows.params import DistillParams
    from flows.learning import distill_flow

    report = asyncio.run(distill_flow(DistillParams(preset=preset, teacher=teacher, n_per_task=n_per_task,
                                                    domain=domain, purpose=purpose, max_tasks=max_tasks)))
    _emit(report, json_out) if json_out else typer.echo(f"{report['examples']} SFT examples -> {report['parquet']}")


def train_cmd(
    kind: Annotated[str, typer.Argument(help="sft or rl.")],
    preset: Annotated[str, typer.Option(help="Preset.")] = "local",
    data: Annotated[Optional[str], typer.Option(help="SFT: Parquet from distill.")] = None,
    model_path: Annotated[Optional[str], typer.Option(help="Start checkpoint.")] = None,
    steps: Annotated[Optional[int], typer.Option(help="RL: GRPO steps.")] = None,
    domain: Annotated[Optional[str], typer.Option(help="RL: task domain.")] = None,
    max_tasks: Annotated[Optional[int], typer.Option(help="RL: at most this many tasks.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Preset override KEY=VALUE.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="RL: print the composed engine, trainer, backend and "
                                          "launch commands, then exit.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Train: `train sft --data X.parquet` or `train rl --preset claw`."""
    _train(kind, preset, data, model_path, steps, domain, max_tasks, _overrides(set_), dry_run, json_out)


def _train(kind: str, preset: str, data: str | None, model_path: str | None, steps: int | None, domain: str | None,
           max_tasks: int | None, overrides: dict[str, Any], dry_run: bool, json_out: bool) -> None:
    if dry_run:
        if kind != "rl":
            raise typer.BadParameter("--dry-run composes an RL run: use `train rl --dry-run`")
        from openforge.presets import load_preset
        from training.workflows.compose import compose

        composition = compose(load_preset(preset, overrides), "rl", model_path)
        if json_out:
            _emit(composition.model_dump(mode="json"), True)
        else:
            for line in composition.describe():
                typer.echo(line)
        return
    if kind not in ("sft", "rl"):
        raise typer.BadParameter(f"unknown training kind {kind!r}: use sft or rl")
    if kind == "sft":
        if not data:
            raise typer.BadParameter("train sft needs --data (the Parquet written by `openforge distill`)")
        if "://" not in data and not Path(data).is_file():
            raise typer.BadParameter(f"--data {data}: no such file (write one with `openforge distill`)")
    _preflight(preset, overrides)
    _prefect_env()
    from flows.params import RLParams, SFTParams
    from flows.learning import rl_flow, sft_flow

    if kind == "sft":
        report = asyncio.run(sft_flow(SFTParams(preset=preset, data=data, model_path=model_path, overrides=overrides)))
    else:
        report = asyncio.run(rl_flow(RLParams(preset=preset, model_path=model_path, steps=steps, domain=domain,
                                              max_tasks=max_tasks, overrides=overrides)))
    _emit(report, json_out) if json_out else typer.echo(f"checkpoint: {report['checkpoint']}")


def evaluate_cmd(
    model_path: Annotated[Optional[list[str]], typer.Option("--model", help="Checkpoint(s); default: base model.")] = None,
    preset: Annotated[str, typer.Option(help="Preset.")] = "local",
    harness: Annotated[Optional[list[str]], typer.Option(help="Harness(es).")] = None,
    k: Annotated[int, typer.Option(help="pass@k / pass^k up to k.")] = 1,
    domain: Annotated[str, typer.Option(help="Task domain.")] = "claw",
    max_tasks: Annotated[Optional[int], typer.Option(help="At most this many tasks.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """pass@k / pass^k per harness and behaviour analysis."""
    _preflight(preset, harnesses=harness or ["react"])
    _prefect_env()
    from flows.params import EvaluateParams
    from flows.learning import evaluate_flow

    report = asyncio.run(evaluate_flow(EvaluateParams(preset=preset, model_paths=model_path or [None],
                                                      harnesses=harness or ["react"], k=k, domain=domain,
                                                      max_tasks=max_tasks)))
    if json_out:
        _emit(report, True)
        return
    for row in report["rows"]:
        typer.echo(json.dumps(row))


def deploy_cmd(
    pool: Annotated[str, typer.Option(help="Process work pool name (prefect.yaml uses openforge-process).")] = "openforge-process",
) -> None:
    """Create the work pool and concurrency limits, then `prefect --no-prompt deploy --all`
    against the configured Prefect server (PREFECT_API_URL)."""
    from flows.deploy import deploy_all

    for line in deploy_all(REPO_ROOT, pool):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("pipeline")(pipeline_cmd)
    app.command("distill")(distill_cmd)
    app.command("train")(train_cmd)
    app.command("evaluate")(evaluate_cmd)
    app.command("deploy")(deploy_cmd)
