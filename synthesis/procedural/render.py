"""Render a :class:`ProceduralTask` into task-directory files (DESIGN §3).

The environment part (Dockerfile, tools.json, fixtures) comes from the claw family's
``environments.claw.taskgen.environment_files``; this module adds the oracle
``solution/solve.sh`` (tool calls through ``python3 -m environments.claw.call``), the
verifier ``tests/test.sh`` and the ``task.toml`` config.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from pathlib import Path

from environments.taskdir import TaskConfig, TaskDir, load_task, write_task
from synthesis.procedural.spec import ProceduralTask
from synthesis.procedural.verifier import render_test_sh

#: Agent / verifier time limits by difficulty (seconds).
AGENT_TIMEOUT = {"easy": 300.0, "medium": 450.0, "hard": 600.0}


def render_solve_sh(task: ProceduralTask) -> str:
    """The oracle: each step as a call-CLI invocation or a workspace write."""
    lines = [
        "#!/usr/bin/env bash",
        f"# Oracle for {task.name}: drives the claw services through the tool-call CLI.",
        "set -euo pipefail",
        'WS="${WORKSPACE:-/app}"',
        'mkdir -p "$WS"',
        "call() { python3 -m environments.claw.call \"$@\" >/dev/null; }",
    ]
    for step in task.solution:
        if step.tool:
            lines.append(f"call {step.tool} {shlex.quote(json.dumps(step.args, sort_keys=True))}")
        elif step.write_path:
            lines.append(f'printf %s {shlex.quote(step.content)} > "$WS/{step.write_path}"')
        elif step.answer is not None:  # the final reply, where harnesses put it (react: logs/agent)
            lines.append('mkdir -p "${LOGS_DIR:-/logs}/agent"')
            lines.append(f'printf %s {shlex.quote(step.answer)} > "${{LOGS_DIR:-/logs}}/agent/final_answer.txt"')
    return "\n".join(lines) + "\n"


def render_plan_json(task: ProceduralTask) -> str | None:
    """``solution/plan.json`` for the oracle teacher engine (tool calls, then the final reply),
    when the task has a final reply to teach; None otherwise (the engine reads solve.sh)."""
    if not any(step.answer is not None for step in task.solution):
        return None
    plan: list[dict] = []
    for step in task.solution:
        if step.tool:
            plan.append({"tool": step.tool, "arguments": step.args})
        elif step.answer is not None:
            plan.append({"final": step.answer})
    return json.dumps(plan, indent=1, sort_keys=True) + "\n"


def task_config(task: ProceduralTask, *, purpose: str = "rl", run_id: str | None = None,
                proposer: str = "procedural") -> TaskConfig:
    if not isinstance(task, ProceduralTask):  # another domain's task renders itself (computer-use)
        return task.task_config(purpose=purpose, run_id=run_id, proposer=proposer)
    return TaskConfig.model_validate({
        "task": {"name": task.name, "description": task.title, "keywords": task.keywords},
        "metadata": {
            "domain": "claw", "category": task.category, "difficulty": task.difficulty, "purpose": purpose,
            "services": task.services, "synth_run_id": run_id, "proposer": proposer,
            "family": task.family, "seed": task.seed,
        },
        "agent": {"timeout_sec": AGENT_TIMEOUT[task.difficulty]},
        "verifier": {"timeout_sec": 60.0},
        "environment": {"build_timeout_sec": 600.0, "cpus": 1, "memory_mb": 1024, "storage_mb": 2048},
    })


def task_files(task: ProceduralTask) -> dict[str, str | bytes]:
    """Every file of the task dir except instruction.md and task.toml."""
    if not isinstance(task, ProceduralTask):  # another domain's task renders itself (computer-use)
        return task.task_files()
    from environments.claw.taskgen import environment_files

    files: dict[str, str | bytes] = dict(environment_files(task.services, task.fixtures, tools=task.tools))
    files["tests/test.sh"] = render_test_sh(task.checks, task.scoring)
    files["solution/solve.sh"] = render_solve_sh(task)
    plan = render_plan_json(task)
    if plan is not None:
        files["solution/plan.json"] = plan
    return files


def write_generated(root: Path, family: str, seeds: Iterable[int]) -> list[TaskDir]:
    """``family`` generated at each of ``seeds``, written under ``root`` (a task dir already
    there is kept) and loaded: the tasks the benches train and evaluate on."""
    from synthesis.procedural import generate

    out = []
    for seed in seeds:
        spec = generate(family, seed)
        path = root / spec.name
        if not path.exists():
            write_task(path, task_config(spec), spec.instruction, task_files(spec))
        out.append(load_task(path))
    return out
