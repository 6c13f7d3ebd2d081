"""One synthesis run: propose → prune → build → test → refine until N tasks are verified.

Plain async functions over the task DB (no Prefect here; the flow wraps :func:`synthesize`).
A run resumes from DB state: claims of dead workers are freed first, every stage skips what
the DB says is done, and agent calls already recorded in the run's ledger are not repeated.
Build/test/refine run in ``workers`` concurrent workers that claim tasks atomically, so more
processes can join the same run (``run_id``) safely.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Engine, select

from openforge.aio import thread_outcome
from openforge.settings import Settings, get_settings
from storage.claims import claim_next, release, transition_task
from storage.db import make_engine, session_scope
from storage.migrate import upgrade
from storage.models import Candidate, Run, Task, TaskStatus
from synthesis.checker import TaskChecker
from synthesis.config import SynthConfig, SynthContext
from synthesis.runtime.base import AgentRuntime
from synthesis.stages.build import build_one, materialize
from synthesis.stages.common import StageStats
from synthesis.stages.propose import propose
from synthesis.stages.prune import prune
from synthesis.stages.refine import refine_one
from synthesis.stages.testing import run_checks_one
from synthesis.store import (
    finish_run,
    record_stage,
    recover_dead_claims,
    start_or_resume_run,
    task_counts,
    worker_id,
)

log = logging.getLogger(__name__)

STAGES = ("propose", "prune", "build", "test", "refine")
ACTIVE = (TaskStatus.building.value, TaskStatus.built.value, TaskStatus.testing.value, TaskStatus.refining.value)
#: Progress callback: (stage, event, data).
ProgressFn = Callable[[str, str, dict[str, Any]], None]


class SynthesisReport(BaseModel):
    """The outcome of a (resumed) run: task counts, per-stage totals, verified dirs."""

    run_id: str
    resumed: bool
    status: str
    n: int
    tasks: dict[str, int]
    stages: dict[str, dict[str, float]] = Field(default_factory=dict)
    cost_usd: float = 0.0
    verified_dirs: list[str] = Field(default_factory=list)


def _noop_progress(stage: str, event: str, data: dict[str, Any]) -> None:
    return None


async def _account(ctx: SynthContext, stats: StageStats, progress: ProgressFn) -> None:
    await asyncio.to_thread(record_stage, ctx.engine, ctx.run_id, stats.stage, count=stats.count,
                            seconds=stats.seconds, cost_usd=stats.cost_usd, attempts=stats.attempts)
    progress(stats.stage, "done", {"count": stats.count, "seconds": stats.seconds, "cost_usd": stats.cost_usd})


def _active_tasks(engine: Engine, run_id: str) -> int:
    with session_scope(engine) as session:
        return len(session.execute(
            select(Task.id).where(Task.synth_run_id == run_id, Task.status.in_(ACTIVE))
        ).all())


_WORK = (("refine", refine_one), ("test", run_checks_one), ("build", build_one))


async def _worker(ctx: SynthContext, index: int, progress: ProgressFn) -> None:
    """Claim and process build/test/refine work of the domain until the run has none left."""
    wid = worker_id(index)
    while True:
        claimed = None
        for stage, fn in _WORK:
            tid = await _claim(ctx, stage, wid)
            if tid is not None:
                claimed = (stage, fn, tid)
                break
        if claimed is None:
            if await asyncio.to_thread(_active_tasks, ctx.engine, ctx.run_id) == 0:
                return
            await asyncio.sleep(0.3)  # others still hold work of this run
            continue
        stage, fn, tid = claimed
        try:
            if stage != "test" and ctx.runtime is None and not await asyncio.to_thread(_procedural_task, ctx.engine, tid):
                # another run's agent-built task: keep the lease (so we do not re-claim it at once)
                # and leave it to a worker with an agent runtime once the lease expires
                log.warning("task %s needs an agent runtime to %s; leaving it to its own run", tid, stage)
                continue
            progress(stage, "start", {"task_id": tid, "worker": wid})
            stats = await fn(ctx, tid, wid)
        except BaseException:
            await thread_outcome(_give_back, ctx.engine, tid, wid)
            raise
        await _account(ctx, stats, progress)
        progress(stage, "task", {"task_id": tid, "count": stats.count})


async def _claim(ctx: SynthContext, stage: str, wid: str) -> str | None:
    """``claim_next`` in a thread, safe against Ctrl-C: a cancel (or several: a cancel scope
    repeats its own) that arrives while the claim is in flight lets the claim land and gives the
    task straight back, so no task is left claimed (e.g. stuck in ``testing``) by a worker that
    is gone."""
    tid, cancelled = await thread_outcome(claim_next, ctx.engine, stage, wid, domain=ctx.config.domain)
    if cancelled:
        if tid is not None:
            await thread_outcome(_give_back, ctx.engine, tid, wid)
        raise asyncio.CancelledError
    return tid


def _procedural_task(engine: Engine, task_id: str) -> bool:
    with session_scope(engine) as session:
        proposer = session.execute(
            select(Candidate.proposer).join(Task, Task.candidate_id == Candidate.id).where(Task.id == task_id)
        ).scalar_one_or_none()
    return proposer == "procedural"


def _give_back(engine: Engine, task_id: str, worker: str) -> None:
    """On Ctrl-C / crash of a stage: a task caught in ``testing`` returns to ``built``."""
    try:
        with session_scope(engine) as session:
            status = session.execute(select(Task.status).where(Task.id == task_id)).scalar_one_or_none()
        if status == TaskStatus.testing.value:
            transition_task(engine, task_id, TaskStatus.built, worker=worker)
        else:
            release(engine, task_id, worker)
    except Exception:  # noqa: BLE001 - best effort; dead claims are also freed on the next start
        log.exception("could not give back task %s", task_id)


def build_context(
    config: SynthConfig,
    engine: Engine,
    run_id: str,
    settings: Settings,
    *,
    runtime: AgentRuntime | None,
    checker: TaskChecker,
) -> SynthContext:
    from storage.db import session_scope as _scope  # noqa: PLC0415

    with _scope(engine) as session:
        seed = int(session.get(Run, run_id).params.get("seed", 0))
    work_dir = settings.runs_dir / run_id
    work_dir.mkdir(parents=True, exist_ok=True)
    settings.tasks_dir.mkdir(parents=True, exist_ok=True)
    return SynthContext(
        engine=engine, run_id=run_id, config=config, tasks_dir=settings.tasks_dir, work_dir=work_dir,
        checker=checker, runtime=runtime, seed=seed,
    )


def report(engine: Engine, run_id: str, resumed: bool, n: int) -> SynthesisReport:
    counts = task_counts(engine, run_id)
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        dirs = session.execute(
            select(Task.dir).where(Task.synth_run_id == run_id, Task.status == TaskStatus.verified.value).order_by(Task.id)
        ).scalars().all()
        stages = dict((run.summary or {}).get("stages", {}))
        return SynthesisReport(run_id=run_id, resumed=resumed, status=run.status, n=n,
                               tasks=counts, stages={s: stages.get(s, {}) for s in STAGES},
                               cost_usd=run.cost_usd or 0.0, verified_dirs=list(dirs))


async def synthesize(
    config: SynthConfig,
    *,
    engine: Engine | None = None,
    settings: Settings | None = None,
    runtime: AgentRuntime | None = None,
    checker: TaskChecker,
    run_id: str | None = None,
    progress: ProgressFn | None = None,
) -> SynthesisReport:
    """Run (or resume) a synthesis run until ``config.n`` tasks are verified or rounds end.
    ``checker`` runs every check rollout (oracle, no-op, test model) on the real path
    (``tasks.synthesis.sandbox_rollouts``: synthesis never runs a task's scripts itself)."""
    settings = settings or get_settings()
    progress = progress or _noop_progress
    if config.backend != "procedural" and runtime is None:
        raise ValueError(f"backend {config.backend!r} needs an agent runtime")
    own_engine = engine is None
    engine = engine or make_engine(settings.db_url)
    try:
        if own_engine:
            await asyncio.to_thread(upgrade, settings.db_url, engine)
        params = config.model_dump(mode="json", include={"domain", "backend", "purpose", "n", "seed", "k_rollouts"})
        rid, resumed = await asyncio.to_thread(start_or_resume_run, engine, params, run_id)
        await asyncio.to_thread(recover_dead_claims, engine)
        ctx = await asyncio.to_thread(build_context, config, engine, rid, settings, runtime=runtime, checker=checker)
        progress("run", "start", {"run_id": rid, "resumed": resumed})
        for _round in range(config.max_rounds):
            counts = await asyncio.to_thread(task_counts, engine, rid)
            if counts.get(TaskStatus.verified.value, 0) >= config.n:
                break
            await _account(ctx, await propose(ctx), progress)
            await _account(ctx, await prune(ctx), progress)
            await asyncio.to_thread(materialize, ctx)
            await asyncio.gather(*(_worker(ctx, i, progress) for i in range(config.workers)))
        counts = await asyncio.to_thread(task_counts, engine, rid)
        status = "done" if counts.get(TaskStatus.verified.value, 0) >= config.n else "incomplete"
        await asyncio.to_thread(finish_run, engine, rid, status)
        return await asyncio.to_thread(report, engine, rid, resumed, config.n)
    finally:
        if own_engine:
            engine.dispose()
