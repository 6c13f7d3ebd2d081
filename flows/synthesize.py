"""Flow ``synthesize``: grow the task bank with verified tasks (resumable)."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import publish_table
from flows.params import SynthesizeParams
from tasks.synthesis import run_synthesis


@flow(name="synthesize", log_prints=False)
async def synthesize_flow(params: SynthesizeParams = SynthesizeParams()) -> dict:
    """Propose → prune → build → test → refine over the shared task DB until `n` tasks of
    `domain` are verified. Re-running with the same `run_id` resumes without repeating paid
    calls. Publishes per-stage totals and task counts as table artifacts."""
    report = await run_synthesis(**params.model_dump())
    await publish_table(
        "synthesis-stages",
        [{"stage": s, **v} for s, v in report["stages"].items()],
        f"Synthesis run {report['run_id']}: per-stage count, seconds, cost",
    )
    await publish_table(
        "synthesis-tasks",
        [{"status": k, "tasks": v} for k, v in report["tasks"].items()],
        f"Synthesis run {report['run_id']}: tasks per status",
    )
    return report
