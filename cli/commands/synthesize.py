"""``openforge synthesize``: run (or resume) the flow ``synthesize`` (flows/synthesize.py) with the
parameters its deployment takes (every option is a field of ``SynthesizeParams``), and print
per-stage totals."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from cli.common import echo_json, params, run_flow

_STAGES = ("propose", "prune", "build", "test", "refine")


def synthesize_cmd(
    domain: Annotated[str, typer.Option("--domain", help="Target domain: claw, computer-use or browser-use.")] = "claw",
    n: Annotated[int, typer.Option("--n", min=1, help="Verified tasks wanted.")] = 16,
    backend: Annotated[str, typer.Option("--backend", help="procedural | claude | openai.")] = "procedural",
    purpose: Annotated[str, typer.Option("--purpose", help="rl | sft (sft skips test/refine).")] = "rl",
    workers: Annotated[int, typer.Option("--workers", min=1, help="Concurrent build/test/refine workers.")] = 2,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="Resume or join this run.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Procedural seed of a new run.")] = None,
    family: Annotated[Optional[list[str]], typer.Option("--family", help="Procedural family to draw from "
                                                        "(repeatable; default: the pool's).")] = None,
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
    fresh: Annotated[bool, typer.Option("--fresh", help="Run again even if a seeded run with the same parameters "
                                        "left its report in the data dir.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Synthesize verified tasks: propose → prune → build → test → refine (resumable)."""
    from flows.checks import check_synthesis
    from flows.params import SynthesizeParams
    from flows.synthesize import synthesize_flow
    from storage.admin import init_home

    p = params(SynthesizeParams, "synthesize", {"parallelism": "--workers", "families": "--family"},
               domain=domain, n=n, backend=backend, purpose=purpose, parallelism=workers, run_id=run_id, seed=seed,
               families=family, k_rollouts=k_rollouts, test_harness=test_harness, test_engine=test_engine,
               sandbox=sandbox, max_refine=max_refine, tau=tau, pool=pool, model=model, base_url=base_url, judge=judge,
               fresh=fresh)
    check_synthesis(p)  # an unknown pool or test harness, a backend without its SDK: before Prefect starts
    init_home()
    report = run_flow(synthesize_flow, p, label="synthesize", quiet=json_out,
                      interrupted="interrupted: progress is in the DB; re-run the same command to continue")
    if json_out:
        echo_json(report)
    else:
        _print_report(report)
    if report["status"] != "done":
        raise typer.Exit(1)


def _print_report(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console()
    table = Table(title=f"synthesis run {report['run_id']} ({report['status']}{', resumed' if report['resumed'] else ''})")
    for col in ("stage", "count", "attempts", "seconds", "cost_usd"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for stage in _STAGES:
        s = report["stages"].get(stage) or {}
        table.add_row(stage, str(int(s.get("count", 0))), str(int(s.get("attempts", 0))),
                      f"{s.get('seconds', 0.0):.1f}", f"{s.get('cost_usd', 0.0):.4f}")
    out.print(table)
    out.print("tasks: " + ", ".join(f"{k}={v}" for k, v in sorted(report["tasks"].items()))
              + f"   total cost ${report['cost_usd']:.4f}")


def register(app: typer.Typer) -> None:
    app.command("synthesize")(synthesize_cmd)
