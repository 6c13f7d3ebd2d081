"""``openforge pipeline``: the main job, the flow ``pipeline`` (flows/pipeline.py) run in-process
with its deployment's parameters, and its summary tables."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from cli.commands.learning import ready
from cli.common import echo_json, params, parse_overrides, run_flow
from flows.params import PipelineParams

if TYPE_CHECKING:
    from rich.table import Table


def pipeline_cmd(
    preset: Annotated[str, typer.Option(help="Preset for every stage (configs/).")] = "local",
    rl_steps: Annotated[Optional[int], typer.Option(help="GRPO steps (default: the preset's; 0 skips GRPO).")] = None,
    n_rl_tasks: Annotated[int, typer.Option(help="RL training tasks.")] = PipelineParams().n_rl_tasks,
    n_sft_tasks: Annotated[int, typer.Option(help="SFT tasks.")] = PipelineParams().n_sft_tasks,
    eval_tasks: Annotated[int, typer.Option(help="Held-out evaluation tasks.")] = PipelineParams().eval_tasks,
    eval_samples: Annotated[int, typer.Option(help="Rollouts per held-out task and checkpoint.")] = PipelineParams().eval_samples,
    base_eval_samples: Annotated[int, typer.Option(help="Rollouts per held-out task for the base policy.")] = PipelineParams().base_eval_samples,
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

    from flows.pipeline import pipeline_flow

    p = params(PipelineParams, "pipeline", preset=preset, rl_steps=rl_steps, n_rl_tasks=n_rl_tasks,
               n_sft_tasks=n_sft_tasks, eval_tasks=eval_tasks, eval_samples=eval_samples,
               base_eval_samples=base_eval_samples,
               family=None if family == "all" else family, teacher=teacher, seed=seed, overrides=parse_overrides(set_),
               fresh=fresh)
    ready(p.preset, p.overrides)
    from openforge.presets import load_preset
    from training.engines.model_store import prepare_default_model_in_background

    prepare_default_model_in_background(load_preset(p.preset, p.overrides).engine.model_path)  # beside Prefect's start
    console = Console(stderr=True)
    t0 = time.perf_counter()
    summary = run_flow(pipeline_flow, p, label="pipeline")
    seconds = time.perf_counter() - t0
    summary["wall_seconds"] = seconds
    if json_out:
        echo_json(summary)
        return
    console.print(stage_table(summary["stages"]))
    if summary.get("reused"):
        console.print(f"reused from an earlier run (same inputs; --fresh runs them again): {', '.join(summary['reused'])}")
    if summary.get("rl"):
        console.print(steps_table(summary["rl"]["steps"]))
    console.print("artifacts:")
    for path in (summary["sft"]["curve_png"], (summary.get("rl") or {}).get("curve_png"), summary["radar_png"],
                 (summary.get("rl") or summary["sft"])["checkpoint"]):
        if path:
            console.print(f"  {path}")
    console.print(f"[bold]pipeline finished in {seconds / 60:.1f} min[/]")


def stage_table(stages: list[dict]) -> Table:
    """The per-stage summary: n, mean ± SE, the gain over the stage before, updates, samples."""
    from rich.table import Table

    table = Table(title="OpenForge pipeline: held-out reward (react harness), mean ± standard error over n rollouts; "
                  "a stage's gain over the one before ± its standard error, paired by held-out task")
    for column in ("stage", "n", "mean ± SE", "gain ± SE", "> 2 SE", "updates", "samples trained", "note"):
        # the note folds rather than ending in "…": a plain log (80 columns) keeps all of it
        table.add_column(column, justify="left" if column in ("stage", "note") else "right",
                         overflow="fold" if column == "note" else "ellipsis")
    for row in stages:
        gain = f"{row['gain']:+.3f} ± {row['gain_se']:.3f}" if "gain" in row else "-"
        table.add_row(row["stage"], str(row["n"]), f"{row['mean_reward']:.3f} ± {row['stderr']:.3f}", gain,
                      ("yes" if row["clear"] else "no") if "gain" in row else "-",
                      "-" if row["updates"] is None else str(row["updates"]),
                      "-" if row["samples_trained"] is None else str(row["samples_trained"]), row["note"])
    return table


def steps_table(steps: list[dict]) -> Table:
    """GRPO per step: train reward, rollouts whose reply the generation cap cut, samples trained,
    zero-variance groups, optimiser updates, loss."""
    from rich.table import Table

    table = Table(title="GRPO steps (train reward; cut_replies: rollouts with a reply cut at the token cap)")
    columns = ("step", "reward", "cut_replies", "samples", "zero_var_groups", "updates", "loss")
    for column in columns:
        table.add_column(column, justify="right")
    for row in steps:
        table.add_row(*(str(row.get(c, "-")) for c in columns))
    return table


def register(app: typer.Typer) -> None:
    app.command("pipeline")(pipeline_cmd)
