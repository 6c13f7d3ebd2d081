"""A wall-clock timeout whose clock stops while the policy engine is answering.

A task's agent timeout (and a rollout's wall-clock timeout) is a budget for the harness and
its environment. Generation is bounded separately, by the rollout's token budget at the
proxy. Counting the engine's time as well would score one policy differently on a loaded
engine (a shared CPU, a busy GPU server) than on an idle one: a timed-out agent is scored on
the workspace it left. The engine's time comes from the proxy (``engine-time``: the wall time
during which at least one of the rollout's calls was in the engine). The deadline moves by at
most ``max_extension`` × ``timeout``, so a wedged engine still ends the rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The engine's time extends a deadline by at most this many timeouts (a 300 s agent timeout
#: ends by 1,200 s of wall time whatever the engine does).
MAX_EXTENSION = 3.0


def hard_deadline(timeout: float) -> float:
    """The longest a timeout of ``timeout`` seconds can last in wall time (what a Kubernetes
    pod's ``activeDeadlineSeconds`` is set to: the scheduler ends the rollout first)."""
    return timeout * (1 + MAX_EXTENSION)


async def wait_excluding_engine(aw: Awaitable[T], timeout: float | None,
                                engine_seconds: Callable[[], Awaitable[float]] | None = None,
                                *, max_extension: float = MAX_EXTENSION) -> T:
    """``await aw`` within ``timeout`` seconds not spent in the engine; ``TimeoutError`` (after
    cancelling it) past that. Without ``engine_seconds`` (or if it fails): a plain timeout."""
    if timeout is None:
        return await aw
    task = asyncio.ensure_future(aw)
    start, extra = time.monotonic(), 0.0
    try:
        while True:
            remaining = start + timeout + extra - time.monotonic()
            if remaining > 0:
                done, _ = await asyncio.wait({task}, timeout=remaining)
                if done:
                    return task.result()
            if engine_seconds is None:
                break
            try:
                seen = await engine_seconds()
            except Exception as exc:  # noqa: BLE001 - no engine clock: the plain timeout holds
                log.warning("engine time unavailable (%s: %s); the wall-clock timeout holds", type(exc).__name__, exc)
                break
            grown = min(seen, max_extension * timeout)
            if grown <= extra + 0.01:
                break
            extra = grown
        raise TimeoutError(f"timed out after {timeout:g}s (+{extra:.0f}s in the engine)")
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
