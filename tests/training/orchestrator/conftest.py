"""Fixtures for orchestrator tests: tiny hand-made task dirs the real runner can score."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.taskdir import TaskConfig, TaskSection, write_task

TEST_SH = """#!/usr/bin/env bash
# Reward 1 when the workspace holds out.txt == hello.
mkdir -p "${LOGS_DIR:-/logs}/verifier"
if [ "$(cat out.txt 2>/dev/null)" = "hello" ]; then r=1; else r=0; fi
echo "$r" > "${LOGS_DIR:-/logs}/verifier/reward.txt"
"""
#: A harness body (python -c) making one chat call through the proxy with the rollout token.
PROXY_CALL = (
    "import json, os, urllib.request\n"
    "req = urllib.request.Request(os.environ['OPENFORGE_BASE_URL'] + '/chat/completions',\n"
    "    data=json.dumps({'model': 'policy', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode(),\n"
    "    headers={'content-type': 'application/json',\n"
    "             'authorization': 'Bearer ' + os.environ['OPENFORGE_ROLLOUT_TOKEN']})\n"
    "print(urllib.request.urlopen(req, timeout=30).read()[:200])\n"
)
SOLVE_SH = """#!/usr/bin/env bash
echo hello > out.txt
"""


def make_task(root: Path, name: str = "tiny", *, dockerfile: str = "FROM debian:bookworm-slim\nWORKDIR /app\n",
              extra: dict[str, str | bytes] | None = None, agent_timeout: float = 60.0) -> Path:
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


@pytest.fixture
def tiny_task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "bank")
