"""Test helpers: a tiny hand-made task dir, a plain-process sandbox layout (Harbor paths
relative to a root, as the local backend's fallback lays them out) and a driver that runs
``python -m environments.runner`` the way a backend does — it copies tests/ in when the
runner prints ``OPENFORGE_PHASE agent_done`` and parses the ``OPENFORGE_RESULT`` line."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from environments.records import RUNNER_REPORT_PREFIX, RunnerReport

REPO = Path(__file__).resolve().parents[3]

VERIFIER = """#!/usr/bin/env bash
# Reward 1 when out.txt holds exactly "hello".
out="${LOGS_DIR:-/logs}/verifier"; mkdir -p "$out"
if [ "$(cat "${WORKSPACE:-/app}/out.txt" 2>/dev/null)" = "hello" ]; then r=1.0; ok=true; else r=0.0; ok=false; fi
echo "$r" > "$out/reward.txt"
echo "{\\"reward\\": $r, \\"checks\\": {\\"out_txt\\": $ok}}" > "$out/reward.json"
"""


def write_file_task(root: Path, *, verifier: str = VERIFIER, services: list[str] | None = None,
                    solve: str = 'printf hello > "${WORKSPACE:-/app}/out.txt"\n', agent_timeout: float = 60,
                    verifier_timeout: float = 30) -> Path:
    """A valid task: write ``hello`` to out.txt in the workspace."""
    task = root / "write-hello"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    svc = ", ".join(f'"{s}"' for s in services or [])
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        schema_version = "1.1"
        [task]
        name = "write-hello"
        description = "write a file"
        [metadata]
        domain = "test"
        services = [{svc}]
        [agent]
        timeout_sec = {agent_timeout}
        [verifier]
        timeout_sec = {verifier_timeout}
        """))
    (task / "instruction.md").write_text("Create a file named out.txt in the working directory containing exactly: hello\n")
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    (task / "tests" / "test.sh").write_text(verifier)
    (task / "solution" / "solve.sh").write_text("#!/usr/bin/env bash\n" + solve)
    for script in ("tests/test.sh", "solution/solve.sh"):
        (task / script).chmod(0o755)
    return task


@dataclass
class Sandbox:
    root: Path
    source: Path  # the full task dir (with tests/ and solution/)

    @property
    def task(self) -> Path:
        return self.root / "task"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def solution(self) -> Path:
        return self.root / "solution"


def make_sandbox(task_dir: Path, root: Path) -> Sandbox:
    """Lay out a sandbox root: task/ without tests+solution, empty workspace/logs/tests."""
    shutil.copytree(task_dir, root / "task", ignore=shutil.ignore_patterns("tests", "solution"))
    for sub in ("workspace", "logs/agent", "logs/verifier", "tests"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    if (task_dir / "solution").is_dir():
        shutil.copytree(task_dir / "solution", root / "solution")
    return Sandbox(root=root, source=task_dir)


@dataclass
class RunnerRun:
    report: RunnerReport
    returncode: int
    stdout: list[str]
    stderr: str


async def run_runner(sb: Sandbox, harness: str, *, extra: list[str] | None = None, env: dict[str, str] | None = None,
                     copy_tests: bool = True, timeout: float = 120) -> RunnerRun:
    """Run the runner as a backend would (copying tests/ in on agent_done)."""
    argv = [sys.executable, "-m", "environments.runner", "--task-dir", str(sb.task), "--harness", harness,
            "--workspace", str(sb.workspace), "--logs-dir", str(sb.logs), "--tests-dir", str(sb.tests),
            "--solution-dir", str(sb.solution), *(extra or [])]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = await asyncio.create_subprocess_exec(*argv, cwd=str(sb.root), env=full_env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    lines: list[str] = []

    async def read_stdout() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode().rstrip("\n")
            lines.append(line)
            if line == "OPENFORGE_PHASE agent_done" and copy_tests:
                shutil.copytree(sb.source / "tests", sb.tests, dirs_exist_ok=True)

    assert proc.stderr is not None
    _, err, _ = await asyncio.wait_for(asyncio.gather(read_stdout(), proc.stderr.read(), proc.wait()), timeout)
    results = [ln for ln in lines if ln.startswith(RUNNER_REPORT_PREFIX)]
    assert results, f"no report line; stdout={lines!r} stderr={err.decode()[-3000:]}"
    assert lines[-1] == results[-1], "the report must be the last stdout line"
    report = RunnerReport.model_validate(json.loads(results[-1][len(RUNNER_REPORT_PREFIX):]))
    return RunnerRun(report=report, returncode=proc.returncode or 0, stdout=lines, stderr=err.decode())
