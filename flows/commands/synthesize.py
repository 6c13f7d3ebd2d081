"""``openforge synthesize``: run (or resume) a synthesis run and print per-stage totals.

Parses options, wires the test-model rollouts of the test stage to the rollout scheduler
(``training.orchestrator``), and calls :func:`synthesis.pipeline.synthesize`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

_STAGES = ("propose", "prune", "build", "test", "refine")


def _rollout_fn(backend: str, engine: str | None, model: str):  # noqa: ANN202
    """Test-model rollouts through the real scheduler (one sandbox + proxy per rollout)."""
    from synthesis.checker import CheckOutcome  # noqa: PLC0415

    async def run(task_dir: Path, harness: str) -> CheckOutcome:
        from training.orchestrator.single import rollout_once  # noqa: PLC0415

        doc = await rollout_once(str(task_dir), harness, backend=backend, engine=engine, model=model)
        return CheckOutcome(harness=harness, reward=doc.get("reward"), status=doc.get("status", "infra_error"),
                            error=doc.get("error"), checks=doc.get("checks") or {}, seconds=doc.get("seconds", 0.0),
                            rollout_id=doc.get("rollout_id"), log_path=doc.get("logs_dir"))

    return run


def synthesize_cmd(
    domain: Annotated[str, typer.Option("--domain", help="Target domain.")] = "claw",
    n: Annotated[int, typer.Option("--n", min=1, help="Verified tasks wanted.")] = 16,
    backend: Annotated[str, typer.Option("--backend", help="procedural | claude | openai.")] = "procedural",
    purpose: Annotated[str, typer.Option("--purpose", help="rl | sft (sft skips test/refine).")] = "rl",
    workers: Annotated[int, typer.Option("--workers", min=1, help="Concurrent build/test/refine workers.")] = 2,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="Resume or join this run.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Procedural seed of a new run.")] = None,
    k_rollouts: Annotated[int, typer.Option("--k-rollouts", help="Test-model rollouts per task.")] = 0,
    test_harness: Annotated[str, typer.Option("--test-harness", help="Harness of the test rollouts.")] = "mini",
    test_engine: Annotated[Optional[str], typer.Option("--test-engine", help="Engine URL or 'local' for test rollouts.")] = None,
    sandbox: Annotated[str, typer.Option("--sandbox", help="Sandbox backend of test rollouts.")] = "local",
    max_refine: Annotated[int, typer.Option("--max-refine", help="Refine iterations per task.")] = 2,
    tau: Annotated[Optional[float], typer.Option("--tau", help="Dedup cosine threshold.")] = None,
    pool: Annotated[Optional[str], typer.Option("--pool", help="User pool: JSONL file or folder.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Agent model (claude: opus).")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="openai backend endpoint.")] = None,
    judge: Annotated[str, typer.Option("--judge", help="Prune quality: heuristic | llm.")] = "heuristic",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Synthesize verified tasks: propose → prune → build → test → refine (resumable)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415
    from pydantic import ValidationError  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from synthesis.checker import LocalChecker  # noqa: PLC0415
    from synthesis.config import SynthConfig  # noqa: PLC0415
    from synthesis.pipeline import synthesize  # noqa: PLC0415
    from synthesis.runtime.factory import make_runtime  # noqa: PLC0415

    try:
        config = SynthConfig(domain=domain, n=n, backend=backend, purpose=purpose, workers=workers, seed=seed,
                             k_rollouts=k_rollouts, test_harness=test_harness, max_refine=max_refine, tau=tau,
                             pool=pool, quality_judge=judge)
        runtime = make_runtime(backend, model=model, base_url=base_url)
    except ValidationError as exc:
        err = exc.errors()[0]
        typer.echo(f"synthesize: --{str(err['loc'][0]).replace('_', '-')}: {err['msg']}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:
        typer.echo(f"synthesize: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(2) from None
    from openforge.settings import get_settings  # noqa: PLC0415
    from synthesis.pools import load_pool, packaged_pool  # noqa: PLC0415

    # Refused here, before a run row or a model exists: an unknown domain or pool, an unknown test harness.
    load_pool(pool, domain=domain) if pool else packaged_pool(domain)
    if k_rollouts:
        from environments.harnesses.registry import get_harness  # noqa: PLC0415

        get_harness(test_harness)
    settings = get_settings()
    checker = None
    if k_rollouts:
        checker = LocalChecker(settings.runs_dir / "synth-checks", rollout=_rollout_fn(sandbox, test_engine, "policy"))

    console = Console(stderr=True)
    progress = Progress(TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, disable=json_out or not console.is_terminal)
    bars: dict[str, Any] = {}

    def on_event(stage: str, event: str, data: dict[str, Any]) -> None:
        if stage == "run":
            bars.update({s: progress.add_task(s, total=n) for s in _STAGES if s not in bars})
            return
        if stage in bars and event == "done" and data.get("count"):
            progress.advance(bars[stage], data["count"])

    try:
        with progress:
            report = asyncio.run(synthesize(config, runtime=runtime, checker=checker, run_id=run_id, progress=on_event))
    except KeyboardInterrupt:
        typer.echo("interrupted: progress is in the DB; re-run the same command to continue", err=True)
        raise typer.Exit(130) from None
    doc = report.model_dump(mode="json")
    if json_out:
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        out = Console()
        table = Table(title=f"synthesis run {report.run_id} ({report.status}{', resumed' if report.resumed else ''})")
        for col in ("stage", "count", "attempts", "seconds", "cost_usd"):
            table.add_column(col, justify="left" if col == "stage" else "right")
        for stage in _STAGES:
            s = report.stages.get(stage) or {}
            table.add_row(stage, str(int(s.get("count", 0))), str(int(s.get("attempts", 0))),
                          f"{s.get('seconds', 0.0):.1f}", f"{s.get('cost_usd', 0.0):.4f}")
        out.print(table)
        out.print("tasks: " + ", ".join(f"{k}={v}" for k, v in sorted(report.tasks.items()))
                  + f"   total cost ${report.cost_usd:.4f}")
    if report.status != "done":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("synthesize")(synthesize_cmd)
