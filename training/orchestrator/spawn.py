"""Start a sandbox's first process without holding up the event loop.

``asyncio.create_subprocess_exec`` runs ``fork``/``exec`` on the event loop's thread and, with
the default child watcher, starts one more thread per child and waits until it runs. On a
loaded 2-core box that held the backend's loop 0.1-0.9 s per sandbox (measured: 9 spawns,
1.7 s in ``Popen``, 0.4 s in ``Thread.start``), and the loop is the one that starts every other
sandbox of the wave and relays their model calls: the k-th sandbox of a wave waited for the
k-1 spawns before it, which is most of the 11-25 s ``setup`` the first rollouts of a stage
recorded in the main job.

:func:`spawn` makes the ``subprocess.Popen`` in a worker thread, reads its stdout through the
loop (``connect_read_pipe``) and learns of its exit from a pidfd the loop watches (no thread
per child). The result quacks like ``asyncio.subprocess.Process`` for what the backends use:
``pid``, ``returncode``, ``stdout`` (a ``StreamReader``) and ``await wait()``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import IO, Any


class SpawnedProcess:
    """A child started by :func:`spawn` (see module doc)."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader | None,
                 exited: asyncio.Future[int]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdout = stdout
        self._exited = exited

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)


async def spawn(argv: Sequence[str], *, cwd: str | None, env: dict[str, str], stderr: IO[Any] | int | None,
                limit: int = 1 << 16, start_new_session: bool = True) -> SpawnedProcess:
    """Start ``argv`` (stdin from /dev/null, stdout piped) off the event loop's thread."""
    loop = asyncio.get_running_loop()
    # Our own copy of the caller's stderr file: the caller may close its file as soon as we
    # return or are cancelled, while the worker thread is still forking.
    err: int | None = os.dup(stderr if isinstance(stderr, int) else stderr.fileno()) if stderr is not None else None
    starting = asyncio.ensure_future(asyncio.to_thread(
        subprocess.Popen, list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=err, start_new_session=start_new_session))
    if err is not None:
        starting.add_done_callback(lambda _: os.close(err))
    try:
        popen = await asyncio.shield(starting)
    except asyncio.CancelledError:  # the child may start all the same: never leave it behind
        starting.add_done_callback(_kill_started)
        raise
    try:
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        assert popen.stdout is not None
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), popen.stdout)
        exited = _watch_exit(loop, popen)
    except BaseException:
        popen.kill()
        await asyncio.to_thread(popen.wait)
        raise
    return SpawnedProcess(popen, reader, exited)


def _kill_started(fut: asyncio.Future[subprocess.Popen[bytes]]) -> None:
    if fut.cancelled() or fut.exception() is not None:
        return
    popen = fut.result()
    try:
        os.killpg(popen.pid, signal.SIGKILL)  # its own session: the whole group
    except OSError:
        popen.kill()
    asyncio.ensure_future(asyncio.to_thread(popen.wait))


def _watch_exit(loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes]) -> asyncio.Future[int]:
    """A future set to the exit code once ``popen`` has exited (reaped here, by pid only)."""
    exited: asyncio.Future[int] = loop.create_future()
    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # no pidfds (old kernel): one waiting thread, as asyncio's watcher does
        def reaped(fut: asyncio.Future[int]) -> None:
            if not exited.done():
                exited.set_result(fut.result())

        asyncio.ensure_future(asyncio.to_thread(popen.wait)).add_done_callback(reaped)
        return exited

    def readable() -> None:
        if popen.poll() is None:  # a pidfd is readable only once the child has exited
            return
        loop.remove_reader(pidfd)
        os.close(pidfd)
        if not exited.done():
            exited.set_result(popen.returncode)

    loop.add_reader(pidfd, readable)
    readable()  # it may have exited already
    return exited
