"""Tiny hand-made task dirs the real runner can score: ``make_task(root, name)`` writes a
task whose verifier rewards 1 when the workspace holds ``out.txt == hello`` (its oracle
writes it; the no-op agent does not)."""

from __future__ import annotations

from pathlib import Path

from environments.taskdir import TaskConfig, TaskSection, write_task

TEST_SH = """#!/usr/bin/env bash
# Reward 1 when the workspace holds out.txt == hello.
mkdir -p "${LOGS_DIR:-/logs}/verifier"
if [ "$(cat out.txt 2>/dev/null)" = "hello" ]; then r=1; else r=0; fi
echo "$r" > "${LOGS_DIR:-/logs}/verifier/reward.txt"
"""
SOLVE_SH = """#!/usr/bin/env bash
echo hello > out.txt
"""


def make_task(root: Path, name: str = "tiny", *, dockerfile: str = "FROM debian:bookworm-slim\nWORKDIR /app\n",
              extra: dict[str, str | bytes] | None = None, agent_timeout: float = 60.0) -> Path:
    """Write the hello task under ``root/name`` (``extra``: more files by relative path) and
    return its directory."""
    cfg = TaskConfig(task=TaskSection(name=name, description="write hello"))
    cfg.agent.timeout_sec = agent_timeout
    cfg.verifier.timeout_sec = 30
    files: dict[str, str | bytes] = {
        "environment/Dockerfile": dockerfile,
        "tests/test.sh": TEST_SH,
        "solution/solve.sh": SOLVE_SH,
    }
    files.update(extra or {})
    return write_task(root / name, cfg, "Write the word hello into out.txt.", files).path
