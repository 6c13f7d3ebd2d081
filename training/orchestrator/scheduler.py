"""The rollout scheduler: run a batch of rollout specs through one sandbox backend.

- at most ``concurrency`` sandboxes at a time; results are yielded as rollouts finish;
- a wall-clock timeout per rollout covering the sandbox's whole life (setup, build,
  harness, verifier): past it the sandbox is killed and removed and the result is
  ``timeout``;
- outcomes classified (``training.orchestrator.classify``);
- optional refill: an ``infra_error`` or ``timeout`` rollout is retried as a fresh rollout
  (new id, same task and group), at most ``refill`` times per original spec;
- with a proxy client, each rollout is registered first (its token and base URL go into
  the spec) and the proxy's call count is read back at the end;
- with a DB engine, the rollout row is written when it starts and when it ends;
- nothing leaks: every sandbox is cleaned up after success, failure, timeout and
  cancellation (Ctrl-C cancels the consumer's task, which cancels every rollout).

Use ``async with aclosing(scheduler.run(specs)) as results: async for r in results``
so that stopping early cancels and cleans what is still running.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import aclosing
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Engine

from environments.deadline import wait_excluding_engine
from environments.records import ErrorKind, Outcome, RolloutResult, RolloutSpec
from openforge.aio import in_thread_to_the_end, to_the_end
from training.orchestrator.backend import SandboxBackend, SandboxError, SandboxHandle
from training.orchestrator.classify import base_result, from_exit
from training.orchestrator.db import record_finished, record_started
from training.orchestrator.separate import is_separate, verifier_task

log = logging.getLogger(__name__)


class ProxyClient(Protocol):
    """What the scheduler needs of ``training.proxy.ProxyAdminClient``."""

    async def register(self, task_id: str | None = None, group_id: str | None = None, run_id: str | None = None,
                       role: str | None = None, harness: str | None = None, metadata: dict[str, Any] | None = None,
                       *, rollout_id: str | None = None, model: str | None = None) -> Any: ...

    async def get(self, rollout_id: str) -> dict[str, Any]: ...

    async def engine_seconds(self, rollout_id: str) -> float: ...

    async def finish(self, rollout_id: str, *, status: str = "ok", reward: float | None = None,
                     error_kind: str | None = None, error: str | None = None, logs: str | None = None) -> dict[str, Any]: ...


def new_rollout_id() -> str:
    return uuid.uuid4().hex


class Scheduler:
    """Runs rollout specs through ``backend``; see the module doc."""

    def __init__(
        self,
        backend: SandboxBackend,
        *,
        concurrency: int = 4,
        refill: int = 0,
        proxy: ProxyClient | None = None,
        db: Engine | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.backend = backend
        self.concurrency = concurrency
        self.refill = refill
        self.proxy = proxy
        self.db = db
        self._sem = asyncio.Semaphore(concurrency)
        self.running = 0
        self.peak_running = 0
        #: rollout id -> sandbox notes (e.g. Dockerfile instructions the backend could not honour)
        self.sandbox_notes: dict[str, list[str]] = {}

    # -- one rollout -------------------------------------------------------------------
    async def run_one(self, spec: RolloutSpec) -> RolloutResult:
        """Run one rollout (respecting the concurrency cap) and return its result."""
        async with self._sem:
            self.running += 1
            self.peak_running = max(self.peak_running, self.running)
            try:
                return await self._run(spec)
            finally:
                self.running -= 1

    async def _register(self, spec: RolloutSpec) -> RolloutSpec:
        if self.proxy is None or spec.token:
            return spec
        reg = await self.proxy.register(
            task_id=spec.task_id, group_id=spec.group_id, run_id=spec.run_id, role=spec.role,
            harness=spec.harness, metadata={"backend": self.backend.name}, rollout_id=spec.rollout_id, model=spec.model,
        )
        return spec.model_copy(update={"rollout_id": reg.rollout_id, "token": reg.token, "base_url": reg.base_url,
                                       "finish_key": reg.finish_key})

    async def _run(self, spec: RolloutSpec) -> RolloutResult:
        t0 = time.monotonic()
        handle: SandboxHandle | None = None
        result: RolloutResult | None = None
        reported = False  # did the runner print (and post to the proxy) its own report?
        try:
            spec = await self._register(spec)
        except Exception as exc:  # noqa: BLE001 - the proxy is infrastructure
            result = base_result(spec, self.backend.name, None)
            result.error_kind, result.error = ErrorKind.engine_error.value, f"proxy registration failed: {type(exc).__name__}: {exc}"
            result.seconds = time.monotonic() - t0
            await self._record(spec, result, None, reported=False)
            return result
        if self.db is not None:
            await asyncio.to_thread(record_started, self.db, spec, self.backend.name)
        try:
            started: list[SandboxHandle] = []

            async def start_and_wait() -> Any:
                started.append(await self.backend.start(spec))
                return await self.backend.wait(started[0])

            try:
                try:
                    # the engine's time answering this rollout does not count (environments/deadline.py)
                    ex = await wait_excluding_engine(start_and_wait(), spec.timeout_sec, self._engine_clock(spec))
                finally:
                    handle = started[0] if started else None
                reported = ex.report is not None
                tail = (await self.backend.logs(handle))[-4000:] if not reported else ""
                result = from_exit(base_result(spec, self.backend.name, handle), ex, log_tail=tail)
            except TimeoutError as exc:
                result = base_result(spec, self.backend.name, handle)
                result.status = Outcome.timeout
                result.error_kind = ErrorKind.deadline_exceeded.value
                result.error = f"rollout exceeded its timeout: {exc}"
                if handle is not None:
                    await self.backend.cancel(handle)
            except SandboxError as exc:
                result = base_result(spec, self.backend.name, handle)
                result.error_kind, result.error = exc.kind.value, str(exc)
            if handle is not None:
                result.timings.update(handle.timings)
                if handle.notes:
                    self.sandbox_notes[result.rollout_id] = list(handle.notes)
        finally:
            if handle is not None:
                # To its end through any cancels: a cancelled rollout must not leave its sandbox behind.
                await to_the_end(self.backend.cleanup(handle))
        if result.status == Outcome.ok:
            result = await self._verify_separately(spec, result)
        result.seconds = time.monotonic() - t0
        result.timings["total"] = result.seconds
        await self._record(spec, result, handle, reported=reported)
        return result

    def _engine_clock(self, spec: RolloutSpec) -> Callable[[], Awaitable[float]] | None:
        """The proxy's count of the seconds its engine spent answering ``spec``'s calls."""
        if self.proxy is None or not spec.token:
            return None
        proxy = self.proxy
        return lambda: proxy.engine_seconds(spec.rollout_id)

    async def _verify_separately(self, spec: RolloutSpec, result: RolloutResult) -> RolloutResult:
        """``environment_mode = "separate"`` (separate.py): score the handed-over artifacts in
        a fresh sandbox of the same backend; its reward becomes the rollout's."""
        from environments.taskdir import TaskDirError, load_task

        try:
            task = await asyncio.to_thread(load_task, spec.task_dir)
        except TaskDirError:
            return result
        if not is_separate(task) or not result.logs_dir:
            return result
        t0 = time.monotonic()
        logs = Path(result.logs_dir)
        vdir = logs.parent / "verifier-task"
        vspec = RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(vdir), harness="noop",
                            timeout_sec=spec.timeout_sec, task_id=spec.task_id, group_id=spec.group_id)
        vres = base_result(vspec, self.backend.name, None)
        handle: SandboxHandle | None = None
        try:
            await asyncio.to_thread(verifier_task, task, logs / "artifacts", vdir)
            async with asyncio.timeout(vspec.timeout_sec):
                handle = await self.backend.start(vspec)
                ex = await self.backend.wait(handle)
            vres = from_exit(base_result(vspec, self.backend.name, handle), ex)
        except TimeoutError:
            vres.status, vres.error_kind = Outcome.timeout, ErrorKind.deadline_exceeded.value
            vres.error = "verifier sandbox exceeded the rollout timeout"
        except (SandboxError, OSError, ValueError) as exc:
            vres.error_kind, vres.error = getattr(exc, "kind", ErrorKind.start_failed).value, str(exc)
        finally:
            if handle is not None:
                await to_the_end(self.backend.cleanup(handle))
            await in_thread_to_the_end(shutil.rmtree, vdir, True)
        result.timings["verifier_sandbox"] = time.monotonic() - t0
        result.checks = {**result.checks, "verifier_rollout_id": vres.rollout_id}
        if vres.status == Outcome.ok and vres.reward is not None:
            result.reward = vres.reward
            result.checks.update(vres.checks)
            result.metrics = dict(vres.metrics)
        else:
            result.status, result.reward = Outcome.infra_error, None
            result.error_kind = ErrorKind.verifier_error.value
            result.error = f"verifier sandbox: {vres.status.value}/{vres.error_kind}: {vres.error}"
        return result

    async def _record(self, spec: RolloutSpec, result: RolloutResult, handle: SandboxHandle | None,
                      *, reported: bool) -> None:
        if self.proxy is not None and spec.token:
            try:
                if not reported:
                    # The runner never reported (killed, crashed, never started): tell the proxy.
                    try:
                        await self.proxy.finish(spec.rollout_id, status=result.status.value, reward=result.reward,
                                                error_kind=result.error_kind, error=result.error)
                    except Exception as exc:  # noqa: BLE001 - already finished is fine
                        log.debug("proxy finish for %s: %s", spec.rollout_id, exc)
                info = await self.proxy.get(spec.rollout_id)
                result.n_calls = int(info.get("n_calls") or 0)
            except Exception as exc:  # noqa: BLE001
                log.warning("rollout %s: could not read the proxy's record: %s", spec.rollout_id, exc)
        if self.db is not None:
            meta = {"isolation": result.isolation, "attempt_of": spec.env.get("OPENFORGE_REFILL_OF")}
            if handle is not None and handle.notes:
                meta["sandbox_notes"] = handle.notes
            await asyncio.to_thread(record_finished, self.db, spec, result, {k: v for k, v in meta.items() if v})

    # -- batches -----------------------------------------------------------------------
    async def run(self, specs: Iterable[RolloutSpec]) -> AsyncIterator[RolloutResult]:
        """Yield results as rollouts finish (refills included, after the failed one)."""
        queue: asyncio.Queue[tuple[RolloutResult | BaseException, RolloutSpec, int]] = asyncio.Queue()
        tasks: set[asyncio.Task[None]] = set()

        async def one(spec: RolloutSpec, attempt: int) -> None:
            try:
                queue.put_nowait((await self.run_one(spec), spec, attempt))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - surfaced to the consumer
                queue.put_nowait((exc, spec, attempt))

        def launch(spec: RolloutSpec, attempt: int) -> None:
            task = asyncio.create_task(one(spec, attempt), name=f"rollout-{spec.rollout_id}")
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        pending = 0
        for spec in specs:
            launch(spec, 0)
            pending += 1
        try:
            while pending:
                item, spec, attempt = await queue.get()
                pending -= 1
                if isinstance(item, BaseException):
                    raise item
                if not item.trainable and attempt < self.refill:
                    fresh = spec.model_copy(
                        update={"rollout_id": new_rollout_id(), "token": None,
                                "base_url": spec.base_url if self.proxy is None else None,
                                "env": {**spec.env, "OPENFORGE_REFILL_OF": item.rollout_id}}
                    )
                    log.info("refill: %s (%s) retried as %s", item.rollout_id, item.status.value, fresh.rollout_id)
                    launch(fresh, attempt + 1)
                    pending += 1
                yield item
        finally:
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)


async def run_rollouts(backend: SandboxBackend, specs: Iterable[RolloutSpec], **kwargs: Any) -> list[RolloutResult]:
    """Run ``specs`` to completion and return every result (finish order)."""
    scheduler = Scheduler(backend, **kwargs)
    out: list[RolloutResult] = []
    async with aclosing(scheduler.run(specs)) as results:
        async for result in results:
            out.append(result)
    return out
