"""Sandbox processes started off the event loop (training/orchestrator/spawn.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from training.orchestrator.spawn import spawn


@pytest.mark.asyncio
async def test_spawned_process_streams_stdout_and_reports_its_exit(tmp_path: Path) -> None:
    err = (tmp_path / "err.log").open("ab")
    try:
        code = "import sys; print('one'); print('two'); sys.stderr.write('oops'); sys.exit(3)"
        proc = await spawn([sys.executable, "-c", code], cwd=str(tmp_path), env=dict(os.environ), stderr=err)
    finally:
        err.close()
    assert proc.pid > 0
    assert proc.stdout is not None
    lines = [line async for line in proc.stdout]
    assert lines == [b"one\n", b"two\n"]
    assert await asyncio.wait_for(proc.wait(), 30) == 3
    assert proc.returncode == 3
    assert await proc.wait() == 3  # again, once exited
    assert (tmp_path / "err.log").read_text() == "oops"
    assert os.getpgid(0) != proc.pid  # its own session (the backend kills the group)


@pytest.mark.asyncio
async def test_a_killed_process_is_seen_exiting(tmp_path: Path) -> None:
    proc = await spawn([sys.executable, "-c", "import time; time.sleep(60)"], cwd=str(tmp_path),
                       env=dict(os.environ), stderr=None)
    assert proc.returncode is None
    os.killpg(proc.pid, 9)
    assert await asyncio.wait_for(proc.wait(), 30) == -9


@pytest.mark.asyncio
async def test_a_missing_program_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await spawn([str(tmp_path / "nope")], cwd=str(tmp_path), env={}, stderr=None)
