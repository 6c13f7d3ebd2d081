"""Render a computer-use task (a :class:`~environments.computer.families.GuiTask`, or anything
shaped like one: :class:`GuiTaskLike`) into the files of a task directory (DESIGN §3):
environment (Dockerfile, desktop.json, workspace files), ``tests/test.sh``
(environments.computer.verifier), and the oracle — ``solution/actions.json`` replayed by the
computer-use harness through ``solution/solve.sh``. The families import this module, never
the other way round.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from environments.computer.verifier import render_test_sh
from environments.taskdir import TaskConfig


class GuiTaskLike(Protocol):
    """What rendering reads of a computer-use task (``families.GuiTask`` has all of it)."""

    family: str
    seed: int
    difficulty: str
    category: str
    title: str
    files: dict[str, str | bytes]
    apps: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    keywords: list[str]
    config_home: str | None

    @property
    def name(self) -> str: ...

BASE_IMAGE = "openforge/computer-base:bookworm"
AGENT_TIMEOUT = {"easy": 300.0, "medium": 450.0, "hard": 600.0}

SOLVE_SH = """#!/usr/bin/env bash
# Oracle of a computer-use task: replays solution/actions.json (computer / bash /
# str_replace_editor actions) through the computer-use harness's desktop and tools.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -f "$HERE/../task.toml" ]; then TASK="$HERE/.."; else TASK="$HERE/../task"; fi
exec "${OPENFORGE_PYTHON:-python3}" -m environments.harnesses.computer_use --replay "$HERE/actions.json" \\
  --task-dir "$TASK" --workspace "${WORKSPACE:-$PWD}" --log-dir "${LOGS_DIR:-/logs}/agent"
"""


def dockerfile(task: GuiTaskLike) -> str:
    lines = [f"# computer-use task sandbox: Xvfb desktop, openbox, {', '.join(sorted({a['argv'][0] for a in task.apps}))}",
             f"FROM {BASE_IMAGE}"]
    if task.files:
        lines.append("COPY files/ /app/")
    lines.append("WORKDIR /app")
    return "\n".join(lines) + "\n"


def desktop_json(task: GuiTaskLike, width: int = 1920, height: int = 1080) -> str:
    doc: dict = {"width": width, "height": height, "apps": task.apps}
    if task.config_home:
        doc["config_home"] = task.config_home
    return json.dumps(doc, indent=2) + "\n"


def task_files(task: GuiTaskLike) -> dict[str, str | bytes]:
    """Every file of the task dir except instruction.md and task.toml."""
    files: dict[str, str | bytes] = {
        "environment/Dockerfile": dockerfile(task),
        "environment/desktop.json": desktop_json(task),
        "tests/test.sh": render_test_sh(task.checks),
        "solution/solve.sh": SOLVE_SH,
        "solution/actions.json": json.dumps({"actions": task.actions}, indent=1) + "\n",
    }
    for rel, text in task.files.items():
        files[f"environment/files/{rel}"] = text
    return files


def task_config(task: GuiTaskLike, *, purpose: str = "rl", run_id: str | None = None,
                proposer: str = "procedural") -> TaskConfig:
    return TaskConfig.model_validate({
        "task": {"name": task.name, "description": task.title, "keywords": task.keywords},
        "metadata": {
            "domain": "computer-use", "category": task.category, "difficulty": task.difficulty, "purpose": purpose,
            "services": [], "harnesses": ["computer-use"], "synth_run_id": run_id, "proposer": proposer,
            "family": task.family, "seed": task.seed,
        },
        "agent": {"timeout_sec": AGENT_TIMEOUT[task.difficulty]},
        "verifier": {"timeout_sec": 60.0},
        "environment": {"build_timeout_sec": 900.0, "cpus": 1, "memory_mb": 2048, "storage_mb": 2048},
    })
