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
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from training.engines.base import EngineWrapper


class CallGate:
    """Open or closed; :meth:`wait` returns at once while open. Starts open."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()

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
        self._inside = 0  # calls past the gate, not yet answered
        self._none_inside = asyncio.Event()
        self._none_inside.set()

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.gate.is_open:
            t0 = time.perf_counter()
            while not self.gate.is_open:  # the gate may close again before this waiter runs
                await self.gate.wait()
            t1 = time.perf_counter()
            self.waits.append((t1, t1 - t0))
        self._inside += 1  # no await between the open gate and this count
        self._none_inside.clear()
        try:
            return await self._engine.chat_completions(body)
        finally:
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
        self.gate.close()
        t0 = time.perf_counter()
        await self._none_inside.wait()
        return time.perf_counter() - t0

    def resume(self) -> None:
        self.gate.open()
