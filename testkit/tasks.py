"""Tiny hand-made task dirs the real runner can score: ``make_task(root, name)`` writes a
task whose verifier rewards 1 when the workspace holds ``out.txt == hello`` (its oracle
writes it; the no-op agent does not)."""

from __future__ import annotations

import sys
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
#: A command-harness agent for the hello task: one chat call through the proxy, then the
#: answer half the time (a coin flip: reward variance in every GRPO group).
ONE_CALL_AGENT = """
import json, os, random, sys, urllib.request
body = json.dumps({"model": "policy", "messages": [{"role": "user", "content": "Write hello."}], "max_tokens": 4})
req = urllib.request.Request(os.environ["OPENFORGE_BASE_URL"] + "/chat/completions", data=body.encode(),
    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENFORGE_ROLLOUT_TOKEN"]})
urllib.request.urlopen(req, timeout=300).read()
if random.random() < 0.5:
    open(os.path.join(sys.argv[1], "out.txt"), "w").write("hello")
"""


def one_call_agent_argv() -> list[str]:
    """``harness_options.argv`` of the command harness running :data:`ONE_CALL_AGENT`."""
    return [sys.executable, "-c", ONE_CALL_AGENT, "{workspace}"]


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
