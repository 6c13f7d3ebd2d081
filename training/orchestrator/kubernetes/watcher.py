"""Follow a run's pods: one watch stream plus a full list every ``resync`` seconds.

Each cycle lists the pods (every item is handed on as a ``SYNC`` event, and pods that
were expected but are missing as ``GONE``), then watches from the list's resourceVersion
until the server ends the stream after ``resync`` seconds. A ``410 Gone`` or a dropped
connection starts the next cycle at once (with backoff on repeated errors), so no
transition is lost for longer than one resync period.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from training.orchestrator.kubernetes.api import KubeApi, KubeError

log = logging.getLogger(__name__)

#: handler(event type, pod dict); types: ADDED, MODIFIED, DELETED, SYNC, GONE
Handler = Callable[[str, dict[str, Any]], None]


class PodWatcher:
    def __init__(self, api: KubeApi, selector: str, handler: Handler, *, resync: float,
                 expected: Callable[[float], list[str]]) -> None:
        """``expected(t)`` names the pods created before monotonic time ``t`` still being followed."""
        self.api, self.selector, self.handler, self.resync = api, selector, handler, resync
        self.expected = expected
        self.events = 0
        self.lists = 0
        self.errors = 0
        self._task: asyncio.Task[None] | None = None
        self.synced = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="openforge-k8s-watch")

    async def _cycle(self) -> None:
        t_list = time.monotonic()
        items, rv = await self.api.list("Pod", self.selector)
        self.lists += 1
        seen = set()
        for pod in items:
            seen.add(pod["metadata"]["name"])
            self.handler("SYNC", pod)
        for name in self.expected(t_list):
            if name not in seen:
                self.handler("GONE", {"metadata": {"name": name}})
        self.synced.set()
        async for kind, pod in self.api.watch_pods(self.selector, rv, timeout_seconds=max(1, int(self.resync))):
            self.events += 1
            if kind == "BOOKMARK":
                continue
            self.handler(kind, pod)

    async def _run(self) -> None:
        backoff = 0.2
        while True:
            try:
                await self._cycle()
                backoff = 0.2
            except asyncio.CancelledError:
                raise
            except KubeError as exc:
                self.errors += 1
                if exc.status != 410:
                    log.warning("pod watch: %s (relisting in %.1fs)", exc, backoff)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 10.0)
            except Exception:
                self.errors += 1
                log.exception("pod watch failed (relisting in %.1fs)", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
