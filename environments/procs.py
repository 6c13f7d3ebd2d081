"""Child processes (the runner's harness and verifier, a task's services, the computer-use
desktop's apps): each in its own session (process group) with output to a log file, a
timeout, and a group kill (TERM, then KILL) so nothing it spawned outlives it. Shared
below the runner and the domains, which both start processes."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from environments.deadline import wait_excluding_engine

log = logging.getLogger(__name__)

KILL_GRACE_S = 3.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGKILL if the runner dies without cleaning up (e.g. SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@dataclass
class ProcResult:
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    seconds: float
    log_path: Path


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the whole process group led by ``pid`` (ignores groups already gone)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def stop_process(proc: asyncio.subprocess.Process, grace: float = KILL_GRACE_S) -> None:
    """TERM the process group, wait ``grace`` seconds, then KILL it; always reaps."""
    if proc.returncode is None:
        kill_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            pass
    kill_group(proc.pid, signal.SIGKILL)  # stragglers in the group, even after a clean exit
    if proc.returncode is None:
        await proc.wait()


async def spawn(argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path,
                user: int | None = None, group: int | None = None) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session, stdin from /dev/null, stdout+stderr to ``log_path``;
    with ``user``, as that uid and ``group`` (default: gid = uid) with no supplementary groups
    (the ``uid`` agent jail, a task's ``[verifier] user``)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out = await asyncio.to_thread(open, log_path, "ab")
    as_user = {"user": user, "group": user if group is None else group, "extra_groups": []} if user is not None else {}
    with out:
        return await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL, stdout=out,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent, **as_user)


async def run_process(argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path,
                      timeout: float | None, user: int | None = None, group: int | None = None,
                      engine_seconds: Callable[[], Awaitable[float]] | None = None) -> ProcResult:
    """Run to completion or ``timeout`` (None: no limit); the process group is always killed
    afterwards. ``engine_seconds``: the policy engine's time on this rollout, which the timeout
    leaves out (environments/deadline.py)."""
    start = time.monotonic()
    proc = await spawn(argv, env=env, cwd=cwd, log_path=log_path, user=user, group=group)
    timed_out = False
    try:
        await wait_excluding_engine(proc.wait(), timeout, engine_seconds)
    except TimeoutError:
        timed_out = True
        log.warning("%s timed out after %.0fs; killing its process group", argv[0], timeout)
    finally:
        rc_before_kill = proc.returncode
        await stop_process(proc)
    return ProcResult(returncode=None if timed_out else rc_before_kill, timed_out=timed_out,
                      seconds=time.monotonic() - start, log_path=log_path)


def tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` characters of a text file ('' if missing)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
