"""The trainer thread: where a process's blocking training work runs, off the event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


#: The one thread that runs a process's blocking training work (batch building, optimiser
#: steps, weight pushes). One thread, not asyncio's pool: torch's per-thread settings hold from
#: step to step, and a step's activations reuse one malloc arena. Steps spread over the pool's
#: threads each kept a multi-GB arena of their own: the main job grew to 24 GB and was killed.
_TRAINER_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="openforge-trainer")


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the trainer thread; if the caller is cancelled, the work is
    waited for (a thread cannot be stopped) so nothing of the run keeps going after it."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    fut = asyncio.get_running_loop().run_in_executor(_TRAINER_THREAD, call)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await fut
        raise
