"""Warm pools: K pre-started pods per (image, resources) whose entry is already parked on
the control endpoint, so a rollout claims one by answering that long poll (no scheduling,
no image pull, no container start on the rollout's path).

A pool refills in the background after every claim and whenever one of its idle pods
dies; a warm pod serves exactly one rollout (fresh sandbox per rollout) and is deleted
after it like any other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


class WarmPool:
    """``create()`` makes one warm pod state (with ``.slot.polled`` and ``.verdict``);
    ``release(state)`` deletes one."""

    def __init__(self, key: tuple[Any, ...], size: int, create: Callable[[], Awaitable[Any]],
                 release: Callable[[Any], Awaitable[None]], *, parallel: int = 32) -> None:
        self.key, self.size, self.parallel = key, size, parallel
        self._create, self._release = create, release
        self.idle: list[Any] = []
        self.starting: set[Any] = set()
        self._fill: asyncio.Task[None] | None = None
        self._watchers: set[asyncio.Task[None]] = set()
        self.claims = 0  # idle pods taken
        self.waited = 0  # rollouts that waited for a pool pod on its way up
        self.misses = 0  # rollouts sent cold
        self.waiters: list[asyncio.Future[Any]] = []
        self._inflight: set[asyncio.Task[Any]] = set()
        self.closed = False

    def take(self) -> Any | None:
        """An idle, live warm pod, or None."""
        while self.idle:
            state = self.idle.pop(0)
            if not state.verdict.done():
                self.claims += 1
                self.kick()
                return state
        return None

    async def claim(self) -> tuple[Any | None, bool]:
        """``(pod, waited)``: an idle pod at once; else, while more pool pods are on their way
        than rollouts already waiting for them, the next one to come up (no extra pod is
        created for this rollout); else ``(None, False)`` and the caller starts a cold pod."""
        state = self.take()
        if state is not None:
            return state, False
        if len(self.starting) + len(self._inflight) > len(self.waiters):
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.waiters.append(fut)
            self.kick()
            try:
                state = await fut
            finally:
                if fut in self.waiters:
                    self.waiters.remove(fut)
            self.waited += 1
            return state, True
        self.misses += 1
        self.kick()
        return None, False

    def kick(self) -> None:
        if not self.closed and (self._fill is None or self._fill.done()):
            self._fill = asyncio.create_task(self._fill_up(), name=f"openforge-warm-fill-{self.key[0]}")

    async def _fill_up(self) -> None:
        """Create pods until idle + starting reaches ``size`` (up to ``parallel`` at once)."""
        failures = 0
        inflight = self._inflight
        try:
            while not self.closed:
                while len(self.idle) + len(self.starting) + len(inflight) < self.size and len(inflight) < self.parallel:
                    inflight.add(asyncio.create_task(self._create()))
                if not inflight:
                    return
                done, _ = await asyncio.wait(set(inflight), return_when=asyncio.FIRST_COMPLETED)
                inflight.difference_update(done)
                for task in done:
                    exc = task.exception()
                    if exc is not None:
                        failures += 1
                        log.warning("warm pool %s: pod creation failed (%s); retrying", self.key[0], exc)
                        await asyncio.sleep(min(30.0, 0.5 * 2 ** failures))
                        continue
                    failures = 0
                    state = task.result()
                    self.starting.add(state)
                    watcher = asyncio.create_task(self._until_ready(state))
                    self._watchers.add(watcher)
                    watcher.add_done_callback(self._watchers.discard)
        finally:
            for task in list(inflight):
                task.cancel()
            inflight.clear()

    async def _until_ready(self, state: Any) -> None:
        polled = asyncio.create_task(state.slot.polled.wait())
        try:
            await asyncio.wait({polled, state.verdict}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            polled.cancel()
        self.starting.discard(state)
        if state.verdict.done() or self.closed:
            await self._release(state)
            self.kick()
            return
        while self.waiters:
            waiter = self.waiters.pop(0)
            if not waiter.done():
                waiter.set_result(state)
                self.kick()
                return
        self.idle.append(state)
        state.verdict.add_done_callback(lambda _f, s=state: self._died(s))

    def _died(self, state: Any) -> None:
        if state in self.idle:  # died before any claim
            self.idle.remove(state)
            task = asyncio.create_task(self._release(state))
            self._watchers.add(task)
            task.add_done_callback(self._watchers.discard)
            self.kick()

    async def wait_ready(self, timeout: float) -> bool:
        """Wait until the pool is full of idle pods (True) or ``timeout`` passes."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        self.kick()
        while len(self.idle) < self.size:
            if loop.time() > end:
                return False
            await asyncio.sleep(0.05)
        return True

    async def aclose(self) -> None:
        self.closed = True
        for waiter in self.waiters:
            waiter.cancel()
        if self._fill is not None:
            self._fill.cancel()
        for task in list(self._watchers):
            task.cancel()
        await asyncio.gather(*([self._fill] if self._fill else []), *self._watchers, return_exceptions=True)
        pods = list(self.idle) + list(self.starting)
        self.idle.clear()
        self.starting.clear()
        await asyncio.gather(*(self._release(s) for s in pods), return_exceptions=True)
