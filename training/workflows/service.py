"""RolloutService: one engine behind the proxy, a sandbox backend and the scheduler.

The service is what a training or evaluation run holds while it rolls out task groups:
``run_groups`` runs G rollouts per task through real harnesses in sandboxes (every model
call recorded by the proxy), and ``trajectories`` rebuilds training samples from the DB.
Every rollout is registered with the generation budget (``budget``, by default the
``max_tokens``/``max_total_tokens`` of ``harness_options``, i.e. the preset's
``[rollout]`` caps): the proxy holds each call within it whatever the harness sends.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack, aclosing
from datetime import UTC, datetime
from typing import Any

from environments.records import RolloutResult, RolloutSpec
from environments.taskdir import TaskDir
from openforge.settings import get_settings
from storage.db import make_engine, session_scope
from storage.migrate import upgrade
from storage.models import Rollout, RolloutStatus
from training.engines.base import ChatEngine
from training.orchestrator.factory import make_backend
from training.orchestrator.scheduler import Scheduler, new_rollout_id
from training.proxy.budget import GenerationBudget
from training.trajectory import Trajectory, build_trajectories
from training.trajectory.build import BuildReport
from training.trajectory.source import load_rollouts_with_calls

log = logging.getLogger(__name__)

ProgressFn = Callable[[RolloutResult], None]


class RolloutService:
    """Async context manager; see the module doc."""

    def __init__(
        self,
        engine: ChatEngine,
        *,
        backend: str = "local",
        harness: str = "react",
        concurrency: int = 4,
        refill: int = 0,
        timeout_sec: float = 300.0,
        harness_options: dict[str, Any] | None = None,
        db_url: str | None = None,
        run_id: str | None = None,
        model: str = "policy",
        budget: GenerationBudget | None = None,
        cpus: float | None = None,
        memory_mb: int | None = None,
    ) -> None:
        self.engine = engine
        self.backend_name = backend
        self.harness = harness
        self.concurrency = concurrency
        self.refill = refill
        self.timeout_sec = timeout_sec
        self.harness_options = dict(harness_options or {})
        self.db_url = db_url or get_settings().db_url
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.model = model
        self.budget = budget if budget is not None else GenerationBudget.from_mapping(self.harness_options)
        self.cpus = cpus
        self.memory_mb = memory_mb
        self._stack = AsyncExitStack()
        self.scheduler: Scheduler | None = None

    async def __aenter__(self) -> RolloutService:
        from training.proxy.server import ProxyServer, parse_ports  # noqa: PLC0415 - starts uvicorn

        stack = self._stack
        self.db = make_engine(self.db_url)
        upgrade(self.db_url, self.db)
        stack.callback(self.db.dispose)
        settings = get_settings()  # where sandboxes reach the proxy: loopback here, the pod IP in a flow pod
        proxy = await stack.enter_async_context(ProxyServer(
            self.engine, db_url=self.db_url, host=settings.proxy_host, ports=parse_ports(settings.proxy_ports),
            advertise_host=settings.proxy_advertise_host))
        client = proxy.client(budget=self.budget)
        stack.push_async_callback(client.aclose)
        sandbox = make_backend(self.backend_name)
        stack.push_async_callback(sandbox.aclose)
        self.scheduler = Scheduler(sandbox, concurrency=self.concurrency, refill=self.refill, proxy=client, db=self.db)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def specs(self, tasks: Sequence[TaskDir], group_size: int, *, role: str = "train", tag: str = "") -> list[RolloutSpec]:
        """G specs per task; the G rollouts of a task share one group id."""
        specs = []
        for task in tasks:
            group_id = f"{self.run_id}-{tag}-{task.id}" if tag else f"{self.run_id}-{task.id}"
            for _ in range(group_size):
                specs.append(
                    RolloutSpec(
                        rollout_id=new_rollout_id(), task_dir=str(task.path), task_id=task.id, harness=self.harness,
                        group_id=group_id, run_id=self.run_id, role=role, model=self.model,
                        timeout_sec=self.timeout_sec, harness_options=self.harness_options,
                        cpus=self.cpus, memory_mb=self.memory_mb,
                    )
                )
        return specs

    async def run_specs(self, specs: Sequence[RolloutSpec], progress: ProgressFn | None = None) -> list[RolloutResult]:
        assert self.scheduler is not None, "use RolloutService as an async context manager"
        results: list[RolloutResult] = []
        async with aclosing(self.scheduler.run(specs)) as stream:
            async for result in stream:
                results.append(result)
                if progress is not None:
                    progress(result)
        return results

    async def run_groups(
        self, tasks: Sequence[TaskDir], group_size: int, *, role: str = "train", tag: str = "",
        progress: ProgressFn | None = None,
    ) -> list[RolloutResult]:
        """Run ``group_size`` rollouts of every task; results in finishing order."""
        return await self.run_specs(self.specs(tasks, group_size, role=role, tag=tag), progress)

    def trajectories(
        self, results: Sequence[RolloutResult], *, gamma: float = 1.0, tokenizer: Any | None = None
    ) -> tuple[list[Trajectory], BuildReport]:
        """Samples of the finished rollouts, rebuilt from the DB (status from the result)."""
        return build_trajectories(self.recorded(results), gamma=gamma, tokenizer=tokenizer)

    def recorded(self, results: Sequence[RolloutResult]) -> list[tuple[RolloutResult, list[Any]]]:
        """``(result, recorded calls)`` of every finished rollout, read back from the DB."""
        by_id = {r.rollout_id: r for r in results}
        return [(by_id[row.id], calls) for row, calls in load_rollouts_with_calls(self.db, rollout_ids=list(by_id))]

    def calls_of(self, results: Sequence[RolloutResult]) -> dict[str, list[dict[str, Any]]]:
        """Recorded calls per rollout id, as plain dicts (for analysis)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row, calls in load_rollouts_with_calls(self.db, rollout_ids=[r.rollout_id for r in results]):
            out[row.id] = [
                {"index": c.index, "api": c.api, "request": c.request, "response": c.response} for c in calls
            ]
        return out


def mark_unfinished_cancelled(db: Any, run_id: str, loop: str) -> int:
    """Rows of ``run_id`` still ``pending``/``running`` → ``infra_error`` / ``cancelled`` (rollouts a
    cancelled run's ``loop`` had started and never finished); how many."""
    with session_scope(db) as session:
        rows = session.query(Rollout).filter(
            Rollout.run_id == run_id,
            Rollout.status.in_([RolloutStatus.pending.value, RolloutStatus.running.value])).all()
        for row in rows:
            row.status = RolloutStatus.infra_error.value
            row.error_kind = "cancelled"
            row.error = f"cancelled with its rl-train run ({loop})"
            row.finished_at = datetime.now(UTC)
        return len(rows)
