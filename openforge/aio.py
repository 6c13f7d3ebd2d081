"""Work that a cancel cannot cut short: cleanup, and work handed to a thread.

A thread cannot be stopped, so work handed to one (a claim in the task DB, an optimiser step)
goes on after its awaiting coroutine is cancelled; cleanup (a sandbox's removal) must finish
even when the rollout it ends was cancelled. ``asyncio.shield`` protects from the first cancel
only: an anyio cancel scope (Prefect's engines are built on anyio) delivers its cancel again
on every turn of the loop, and ``asyncio.gather`` hands each one on to its children, so a
``try: await shield(fut) except CancelledError: await fut`` is cut short by the second cancel,
whatever the caller meant to do with the result (give a claim back) never happens, and a
shielded cleanup left running on its own is cancelled when ``asyncio.run`` shuts the loop
down. These helpers wait for the work to its end through any number of cancels.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def outlast(aw: Awaitable[T]) -> tuple[T, bool]:
    """``(result of aw, cancelled)``: ``aw`` is awaited to its end; ``cancelled`` says whether the
    caller was cancelled meanwhile (it then raises ``CancelledError`` itself once it has dealt
    with the result, or lets the exception in flight go on). An exception of ``aw`` propagates."""
    fut = asyncio.ensure_future(aw)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(fut), cancelled
        except asyncio.CancelledError:
            if fut.cancelled():  # the work itself was cancelled (an executor's shutdown)
                raise
            cancelled = True
            if fut.done():  # the cancel and the result came in the same turn of the loop
                return fut.result(), True


async def to_the_end(aw: Awaitable[T]) -> T:
    """``await aw`` to its end; a cancel that arrives meanwhile is raised after it."""
    value, cancelled = await outlast(aw)
    if cancelled:
        raise asyncio.CancelledError
    return value


def _in_executor(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any],
                 executor: concurrent.futures.Executor | None) -> asyncio.Future[T]:
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return asyncio.get_running_loop().run_in_executor(executor, call)


async def thread_outcome(fn: Callable[..., T], *args: Any, executor: concurrent.futures.Executor | None = None,
                         **kwargs: Any) -> tuple[T, bool]:
    """:func:`outlast` of ``fn(*args, **kwargs)`` run in ``executor`` (asyncio's default pool
    when ``None``) with this task's context."""
    return await outlast(_in_executor(fn, args, kwargs, executor))


async def in_thread_to_the_end(fn: Callable[..., T], *args: Any, executor: concurrent.futures.Executor | None = None,
                               **kwargs: Any) -> T:
    """:func:`to_the_end` of ``fn(*args, **kwargs)`` in a thread: nothing of ``fn`` keeps going
    after its caller."""
    return await to_the_end(_in_executor(fn, args, kwargs, executor))
