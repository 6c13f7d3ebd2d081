"""Flow ``synthesize``: grow the task bank with verified tasks (resumable).

``openforge synthesize`` runs this flow with the parameters the deployment takes
(:class:`flows.params.SynthesizeParams`): every option of the command is one of them."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import publish_table
from flows.checks import check_synthesis
from flows.params import SynthesizeParams
from tasks.cache import in_data_dir, refreshing
from tasks.synthesis import run_synthesis


@flow(name="synthesize", log_prints=False)
async def synthesize_flow(params: SynthesizeParams = SynthesizeParams()) -> dict:
    """Propose → prune → build → test → refine over the shared task DB until `n` tasks of
    `domain` are verified (with `k_rollouts`, the test model's rollouts estimate difficulty).
    Re-running with the same `run_id` (or the same unfinished parameters) resumes without
    repeating paid calls; a seeded run's report is kept in the data dir and reused unless
    `fresh`. Publishes per-stage totals and task counts as table artifacts."""
    check_synthesis(params)
    with refreshing(params.fresh):
        report = await in_data_dir(run_synthesis)(**params.model_dump(exclude={"fresh"}))
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
