"""Asynchronous GRPO rollouts with bounded staleness (``train.async_rollouts``, issue 17).

The synchronous loop (:func:`training.workflows.rl.rl_train`) waits for every rollout of
a step, so the engine idles while the trainer steps and the trainer idles while the
slowest rollout runs. Here rollouts and training overlap:

- :class:`GroupPool` keeps ``train_batch_size · (1 + max_staleness)`` task groups
  outstanding (running, or finished and not yet trained on): rollouts for the next
  ``max_staleness`` steps run while the current step trains. Each group is one asyncio
  task over the shared scheduler (its concurrency cap, timeouts and refills apply as in
  sync mode); a group is finished when all its G rollouts (refills included) are.
- A step takes the first ``train_batch_size`` finished groups in finishing order and
  waits at most ``rollout.timeout_sec`` for them (the straggler budget): past it the step
  trains on the groups it has (none: no update); a group still running counts towards a
  later step.
- The staleness filter (:mod:`training.trajectory.staleness`) drops or corrects
  trajectories with calls older than ``max_staleness`` policy versions, and drops or
  trains per call those whose calls span versions; everything is counted.
- Blocking work never runs on the event loop: reading the calls back, building the batch,
  ``trainer.step`` (CPU-bound) and the weight push run in worker threads; a cancelled run
  waits for a running worker to finish, cancels every group (the scheduler removes every
  sandbox) and marks the rows of rollouts it never finished ``infra_error / cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from environments.records import RolloutResult
from environments.taskdir import TaskDir
from openforge.aio import thread_outcome
from training.trajectory.staleness import StalenessPolicy, filter_stale
from training.workflows.activity import Activity
from training.workflows.common import grpo_batch, in_thread
from training.workflows.service import mark_unfinished_cancelled
from training.workflows.task_sampler import TaskSampler

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class FinishedGroup:
    """One task group whose rollouts have all finished."""

    task: TaskDir
    tag: str
    results: list[RolloutResult]
    launched_version: int | None
    launched_at: float
    finished_at: float


@dataclass
class PoolStats:
    launched: int = 0
    finished: int = 0
    consumed: int = 0
    waits: list[float] = field(default_factory=list)
    budget_expired: int = 0


class GroupPool:
    """Task groups in flight over one rollout service; see the module doc.

    ``service`` needs ``run_groups(tasks, group_size, role=, tag=)`` (a
    :class:`~training.workflows.service.RolloutService`); ``version`` returns the engine's
    policy version (recorded on each group at launch, for the report)."""

    def __init__(self, service: Any, group_size: int, *, version: Callable[[], int | None] = lambda: None,
                 role: str = "train") -> None:
        self.service = service
        self.group_size = group_size
        self.version = version
        self.role = role
        self.stats = PoolStats()
        self._running: set[asyncio.Task[None]] = set()
        self._finished: list[FinishedGroup] = []
        self._error: BaseException | None = None
        self._changed = asyncio.Event()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def outstanding(self) -> int:
        """Groups running or finished and not yet taken."""
        return len(self._running) + len(self._finished)

    @property
    def running(self) -> int:
        return len(self._running)

    def launch(self, task: TaskDir, tag: str) -> None:
        version, t0 = self.version(), time.perf_counter()

        async def group() -> None:
            try:
                results = await self.service.run_groups([task], self.group_size, role=self.role, tag=tag)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - surfaced to the step that waits
                self._error = self._error or exc
            else:
                self._finished.append(FinishedGroup(task, tag, list(results), version, t0, time.perf_counter()))
                self.stats.finished += 1
            self._changed.set()

        job = asyncio.create_task(group(), name=f"group-{tag}")
        self._running.add(job)
        job.add_done_callback(self._running.discard)
        self.stats.launched += 1

    async def take(self, n: int, budget: float) -> list[FinishedGroup]:
        """The first ``n`` finished groups, waiting at most ``budget`` seconds for them; past
        the budget, the groups finished by then (possibly none)."""
        t0 = time.perf_counter()
        deadline = t0 + budget
        while len(self._finished) < n and self._error is None:
            left = deadline - time.perf_counter()
            if left <= 0 or not self._running:
                if left <= 0:
                    self.stats.budget_expired += 1
                break
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=left)
        if self._error is not None:
            raise self._error
        taken, self._finished = self._finished[:n], self._finished[n:]
        self.stats.consumed += len(taken)
        self.stats.waits.append(time.perf_counter() - t0)
        return taken

    async def aclose(self) -> None:
        """Cancel every running group (the scheduler cleans up their sandboxes) and mark the
        rollout rows they leave unfinished."""
        jobs = list(self._running)
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
        db, run_id = getattr(self.service, "db", None), getattr(self.service, "run_id", None)
        if jobs and db is not None and run_id:
            n, _ = await thread_outcome(mark_unfinished_cancelled, db, run_id, "async rollouts")
            if n:
                log.info("async rollouts: %d unfinished rollout(s) of run %s marked cancelled", n, run_id)


@dataclass
class AsyncStep:
    """What one asynchronous step consumed and did (turned into a StepRecord by rl.py)."""

    step: int
    results: list[RolloutResult]
    samples: list[Any]
    batch_report: Any
    staleness: Any
    metrics: dict[str, float]
    groups_taken: int
    wait_seconds: float
    seconds: float
    engine_idle_seconds: float
    trainer_idle_seconds: float


async def async_steps(
    *,
    service: Any,
    trainer: Any,
    engine: Any,
    push: Callable[[], Any],
    cfg: Any,
    budget: float,
    steps: int,
    sampler: TaskSampler,
    engine_activity: Activity,
    on_step: Callable[[AsyncStep], None],
) -> PoolStats:
    """Run ``steps`` asynchronous GRPO steps (see the module doc); ``on_step`` gets each.

    ``push`` is a coroutine function sending the trainer's new weights to the engine;
    ``sampler`` draws each launch's tasks and sees every group taken; ``cfg`` is the preset's
    ``[train]`` section; ``on_step`` runs in a worker thread (it may block: DB writes, logging)."""
    policy = StalenessPolicy.from_train(cfg)
    n = cfg.train_batch_size
    window = n * (1 + cfg.max_staleness)
    trainer_activity = Activity()
    launched = 0
    async with GroupPool(service, cfg.group_size, version=lambda: engine.policy_version) as pool:
        t_prev = time.perf_counter()
        for step in range(1, steps + 1):
            while pool.outstanding < window:  # rollouts for this step and the next max_staleness ones
                for task in sampler.draw(n):
                    launched += 1
                    pool.launch(task, f"g{launched}")
            w0 = time.perf_counter()
            groups = await pool.take(n, budget)
            wait = time.perf_counter() - w0
            results = [r for g in groups for r in g.results]
            sampler.observe(results)
            version = int(engine.policy_version or 0)
            items = await in_thread(service.recorded, results) if results else []
            kept, stale = filter_stale(items, version, policy)
            samples, report = await in_thread(grpo_batch, kept, cfg, trainer.tokenizer)
            metrics: dict[str, float] = {}
            if samples and (any(s.advantage != 0.0 for s in samples) or cfg.kl_coef or cfg.entropy_coef):
                busy = trainer_activity.begin()
                try:
                    metrics = await in_thread(trainer.step, samples,
                                              importance_correction=True if stale.needs_correction else None)
                    if metrics.get("updated"):
                        s0 = time.perf_counter()
                        await push()
                        metrics["weight_sync_seconds"] = time.perf_counter() - s0
                finally:
                    trainer_activity.end(busy)
            t_end = time.perf_counter()
            span = t_end - t_prev
            metrics.update(stale.as_metrics())
            metrics.update({"solved_tasks": float(len(sampler.solved)), "groups_taken": float(len(groups)),
                            "groups_running": float(pool.running),
                            "group_wait_seconds": wait, "budget_expired": float(wait >= budget)})
            await in_thread(on_step, AsyncStep(  # the callback writes the step's metrics to the DB
                step=step, results=results, samples=samples, batch_report=report, staleness=stale, metrics=metrics,
                groups_taken=len(groups), wait_seconds=wait, seconds=span,
                engine_idle_seconds=max(0.0, span - engine_activity.busy(t_prev, t_end)),
                trainer_idle_seconds=max(0.0, span - trainer_activity.busy(t_prev, t_end)),
            ))
            engine_activity.forget_before(t_prev)
            trainer_activity.forget_before(t_prev)
            t_prev = t_end
    return pool.stats
