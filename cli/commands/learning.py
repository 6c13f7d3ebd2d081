"""``openforge distill``, ``train sft|rl`` and ``evaluate``: the flows ``distill``, ``sft-train``,
``rl-train`` and ``evaluate`` (flows/learning.py), run in-process with their deployment's parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cli.common import echo_json, params, parse_overrides, run_flow

FRESH_HELP = ("Run again; by default a result cached in the data dir by an earlier run with the same inputs "
              "(tasks, checkpoint, preset keys) is reused.")


def ready(preset: str, overrides: dict[str, Any] | None = None, harnesses: list[str] | None = None,
          bank: tuple[str, str | None, str | None] | None = None) -> None:
    """Refuse a bad preset, override, harness, task DB or an empty bank before Prefect starts or a
    model loads (each a user error ``cli/errors.py`` prints as one line); the data dir and DB exist after."""
    from flows.checks import check_bank, check_harnesses, check_preset
    from storage.admin import init_home

    check_preset(preset, overrides)
    check_harnesses(harnesses or [])
    init_home()
    if bank is not None:
        check_bank(*bank)


def distill_cmd(
    preset: Annotated[str, typer.Option(help="Preset.")] = "local",
    teacher: Annotated[str, typer.Option(help="'oracle', 'local' or a URL.")] = "oracle",
    n_per_task: Annotated[int, typer.Option(help="Teacher rollouts per task.")] = 3,
    domain: Annotated[str, typer.Option(help="Task domain.")] = "claw",
    purpose: Annotated[str, typer.Option(help="Task purpose.")] = "sft",
    max_tasks: Annotated[Optional[int], typer.Option(help="At most this many tasks.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Preset override KEY=VALUE (repeatable).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help=FRESH_HELP)] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Teacher rollouts → filtered SFT data (JSONL + Parquet)."""
    from flows.learning import distill_flow
    from flows.params import DistillParams

    p = params(DistillParams, "distill", preset=preset, teacher=teacher, n_per_task=n_per_task, domain=domain,
               purpose=purpose, max_tasks=max_tasks, overrides=parse_overrides(set_), fresh=fresh)
    ready(p.preset, p.overrides, bank=("distill", p.domain, p.purpose))
    report = run_flow(distill_flow, p, label="distill", quiet=json_out)
    echo_json(report) if json_out else typer.echo(f"{report['examples']} SFT examples -> {report['parquet']}")


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
    fresh: Annotated[bool, typer.Option("--fresh", help=FRESH_HELP)] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Train: `train sft --data X.parquet` or `train rl --preset claw`."""
    overrides = parse_overrides(set_)
    if dry_run:
        _dry_run(kind, preset, overrides, model_path, json_out)
        return
    if kind not in ("sft", "rl"):
        raise typer.BadParameter(f"unknown training kind {kind!r}: use sft or rl")
    from flows.learning import rl_flow, sft_flow
    from flows.params import RLParams, SFTParams

    if kind == "sft":
        if not data:
            raise typer.BadParameter("train sft needs --data (the Parquet written by `openforge distill`)")
        if "://" not in data and not Path(data).is_file():
            raise typer.BadParameter(f"--data {data}: no such file (write one with `openforge distill`)")
        ready(preset, overrides)
        report = run_flow(sft_flow, params(SFTParams, "train sft", preset=preset, data=data, model_path=model_path,
                                           overrides=overrides, fresh=fresh), label="sft-train", quiet=json_out)
    else:
        p = params(RLParams, "train rl", preset=preset, model_path=model_path, steps=steps, domain=domain,
                   max_tasks=max_tasks, overrides=overrides, fresh=fresh)
        from openforge.presets import load_preset

        ready(p.preset, p.overrides, bank=("rl-train", p.domain or load_preset(p.preset, p.overrides).tasks.domain,
                                           p.purpose))
        report = run_flow(rl_flow, p, label="rl-train", quiet=json_out)
    echo_json(report) if json_out else typer.echo(f"checkpoint: {report['checkpoint']}")


def _dry_run(kind: str, preset: str, overrides: dict[str, Any], model_path: str | None, json_out: bool) -> None:
    """What ``train rl`` would compose on this machine (read-only: nothing starts)."""
    if kind != "rl":
        raise typer.BadParameter("--dry-run composes an RL run: use `train rl --dry-run`")
    from openforge.presets import load_preset
    from training.workflows.compose import compose

    composition = compose(load_preset(preset, overrides), "rl", model_path)
    if json_out:
        echo_json(composition.model_dump(mode="json"))
        return
    for line in composition.describe():
        typer.echo(line)


def evaluate_cmd(
    model_path: Annotated[Optional[list[str]], typer.Option("--model", help="Checkpoint(s); default: base model.")] = None,
    preset: Annotated[str, typer.Option(help="Preset.")] = "local",
    harness: Annotated[Optional[list[str]], typer.Option(help="Harness(es).")] = None,
    k: Annotated[int, typer.Option(help="pass@k / pass^k up to k.")] = 1,
    domain: Annotated[str, typer.Option(help="Task domain.")] = "claw",
    max_tasks: Annotated[Optional[int], typer.Option(help="At most this many tasks.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Preset override KEY=VALUE (repeatable).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help=FRESH_HELP)] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """pass@k / pass^k per harness and behaviour analysis."""
    from flows.learning import evaluate_flow
    from flows.params import EvaluateParams

    p = params(EvaluateParams, "evaluate", {"model_paths": "--model", "harnesses": "--harness"},
               preset=preset, model_paths=model_path or [None], harnesses=harness or ["react"], k=k, domain=domain,
               max_tasks=max_tasks, overrides=parse_overrides(set_), fresh=fresh)
    ready(p.preset, p.overrides, harnesses=p.harnesses, bank=("evaluate", p.domain, p.purpose))
    report = run_flow(evaluate_flow, p, label="evaluate", quiet=json_out)
    if json_out:
        echo_json(report)
        return
    for row in report["rows"]:
        typer.echo(json.dumps(row))


def register(app: typer.Typer) -> None:
    app.command("distill")(distill_cmd)
    app.command("train")(train_cmd)
    app.command("evaluate")(evaluate_cmd)
