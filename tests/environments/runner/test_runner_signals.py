"""SIGTERM to the runner stops the harness's whole process group and still reports."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from environments.records import RUNNER_REPORT_PREFIX
from tests.environments.runner.sandbox import REPO, make_sandbox, write_file_task


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_sigterm_kills_harness_and_reports_cancelled(tmp_path: Path) -> None:
    sb = make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")
    opts = json.dumps({"template": "bash -c 'sleep 300 & echo $! > {workspace}/child.pid; wait'"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "environments.runner", "--task-dir", str(sb.task), "--harness", "command",
        "--workspace", str(sb.workspace), "--logs-dir", str(sb.logs), "--tests-dir", str(sb.tests),
        "--harness-options", opts, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    pidfile = sb.workspace / "child.pid"
    for _ in range(300):
        if pidfile.is_file() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.1)
    child = int(pidfile.read_text())
    assert _alive(child)
    proc.send_signal(signal.SIGTERM)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    last = out.decode().strip().splitlines()[-1]
    assert last.startswith(RUNNER_REPORT_PREFIX)
    report = json.loads(last[len(RUNNER_REPORT_PREFIX):])
    assert (report["status"], report["error_kind"]) == ("infra_error", "cancelled")
    for _ in range(50):
        if not _alive(child):
            break
        await asyncio.sleep(0.1)
    assert not _alive(child), "the harness's children must not outlive the runner"
