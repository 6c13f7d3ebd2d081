"""A gate in front of the policy engine: model calls wait while it is closed.

The synchronous GRPO loop starts the next step's rollouts (sandboxes, runners, mock
services, harness start-up, everything up to the first model call) while the current step
trains, and closes the gate meanwhile: those first calls wait here until the new weights are
in the engine, so every call is still sampled by the trainer's current policy (the engine
records the version it admitted the call under; the loop checks it, see
:func:`training.trajectory.staleness.filter_stale`). What the overlap hides is the rollouts'
start-up, the "to first call" part of ``bench/rl_step.py``'s orchestration time.

:class:`GatedEngine` wraps a :class:`~training.engines.base.ChatEngine` and delegates the rest;
the wait happens before the wrapped engine sees the call, so an engine's busy-time record
(:class:`training.workflows.activity.TimedEngine`, wrapped inside) does not count it.

The asynchronous loop with an out-of-process engine (vLLM) uses the same gate to push
weights under running rollouts: :meth:`GatedEngine.pause` closes it and waits for the calls
already inside to finish, the server reloads, :meth:`GatedEngine.resume` opens it. Every call
is then served by one set of weights, the one whose version it records.

The proxy serves on its own thread and event loop (``training.proxy.server``), the loop that
opens and closes the gate is the run's: the gate and the drain are therefore thread-safe
(:class:`Flag`), not ``asyncio.Event`` (bound to one loop, woken from another thread only
when that loop next turns).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from training.engines.base import EngineWrapper


class Flag:
    """Set or clear, from any thread; coroutines on any event loop :meth:`wait` until it is
    set (each woken on its own loop, ``call_soon_threadsafe``)."""

    def __init__(self, value: bool = False) -> None:
        self._value = value
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        with self._lock:
            self._value = True
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
                loop.call_soon_threadsafe(_wake, future)

    def clear(self) -> None:
        with self._lock:
            self._value = False

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._value:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            if not future.done() or future.cancelled():
                with self._lock:
                    self._waiters = [(lp, f) for lp, f in self._waiters if f is not future]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class CallGate:
    """Open or closed; :meth:`wait` returns at once while open. Starts open. Thread-safe."""

    def __init__(self) -> None:
        self._open = Flag(True)

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def close(self) -> None:
        self._open.clear()

    def open(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


class GatedEngine(EngineWrapper):
    """A ChatEngine whose calls first wait for ``gate`` to be open; everything else is delegated."""

    def __init__(self, engine: Any, gate: CallGate) -> None:
        super().__init__(engine)
        self.gate = gate
        #: ``(when it ended, seconds)`` of each wait of a call that found the gate closed, on
        #: the ``time.perf_counter`` clock (a proxy records a call's latency around the whole
        #: engine call, this wait included)
        self.waits: list[tuple[float, float]] = []
        self._lock = threading.Lock()  # the gate's state and the count of calls inside, together
        self._inside = 0  # calls past the gate, not yet answered
        self._none_inside = Flag(True)

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        t0: float | None = None
        while True:
            with self._lock:  # a pause (another thread) closes the gate under this lock
                if self.gate.is_open:
                    self._inside += 1
                    self._none_inside.clear()
                    break
            t0 = time.perf_counter() if t0 is None else t0
            await self.gate.wait()
        if t0 is not None:
            t1 = time.perf_counter()
            self.waits.append((t1, t1 - t0))
        try:
            return await self._engine.chat_completions(body)
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0:
                    self._none_inside.set()

    @property
    def calls_inside(self) -> int:
        """Calls the wrapped engine is serving now."""
        return self._inside

    async def pause(self) -> float:
        """Close the gate and wait until the wrapped engine serves no call: from then until
        :meth:`resume` no call reaches it, so its weights can change with no call sampled
        partly by the old weights and partly by the new. Returns the seconds the drain took."""
        with self._lock:
            self.gate.close()
        t0 = time.perf_counter()
        await self._none_inside.wait()
        return time.perf_counter() - t0

    def resume(self) -> None:
        self.gate.open()
