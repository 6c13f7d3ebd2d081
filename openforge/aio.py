"""Thread work that a cancel cannot cut short.

A thread cannot be stopped, so work handed to one (a claim in the task DB, an optimiser step)
goes on after its awaiting coroutine is cancelled. ``asyncio.shield`` protects it from the first
cancel only: anyio cancel scopes (Prefect's engine runs inside them) deliver their cancel again
on every turn of the loop, and ``asyncio.gather`` hands each one on to its children, so a
``try: await shield(fut) except CancelledError: await fut`` is cut short by the second cancel
and whatever the caller meant to do with the result (give a claim back) never happens. These
helpers wait for the thread to its end through any number of cancels.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def thread_outcome(fn: Callable[..., T], *args: Any, executor: concurrent.futures.Executor | None = None,
                         **kwargs: Any) -> tuple[T, bool]:
    """``(fn(*args, **kwargs), cancelled)``: ``fn`` runs in ``executor`` (asyncio's default pool
    when ``None``, with this task's context) and is waited for to its end; ``cancelled`` says
    whether the caller was cancelled meanwhile, and then it must raise ``CancelledError`` itself
    once it has dealt with the result. An exception of ``fn`` propagates as it is."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    fut = asyncio.get_running_loop().run_in_executor(executor, call)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(fut), cancelled
        except asyncio.CancelledError:
            if fut.cancelled():  # only the executor's shutdown cancels it
                raise
            cancelled = True
            if fut.done():  # the cancel and the result came in the same turn of the loop
                return fut.result(), True


async def in_thread_to_the_end(fn: Callable[..., T], *args: Any, executor: concurrent.futures.Executor | None = None,
                               **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a thread (see :func:`thread_outcome`); a cancel that arrives
    meanwhile is raised once ``fn`` has returned, so nothing of it keeps going after its caller."""
    value, cancelled = await thread_outcome(fn, *args, executor=executor, **kwargs)
    if cancelled:
        raise asyncio.CancelledError
    return value
