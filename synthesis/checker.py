"""How synthesis asks "what reward does harness H get on this task?" without knowing how.

:class:`TaskChecker` is the one seam between synthesis and rollouts (synthesis never
imports ``training/``): the flows layer wires a production checker to the rollout
scheduler. :class:`LocalChecker` is the built-in one: it runs the ``oracle`` (the task's
``solution/solve.sh``) and the ``noop`` agent (does nothing) itself — start the task's claw
services, run the script in a fresh workspace, run ``tests/test.sh``, read the reward — and
hands any other harness to an injected ``rollout`` callable.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from environments.procs import kill_group
from environments.verifiers.reward_files import read_checks

log = logging.getLogger(__name__)

ORACLE, NOOP = "oracle", "noop"
_REPO_ROOT = Path(__file__).resolve().parent.parent


class CheckOutcome(BaseModel):
    """The result of one check rollout of a task."""

    harness: str
    reward: float | None = None
    status: str = "ok"  # ok | policy_error | infra_error | timeout (as RolloutResult)
    error: str | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    cost_usd: float = 0.0
    rollout_id: str | None = None
    log_path: str | None = None
    transcript_path: str | None = None


@runtime_checkable
class TaskChecker(Protocol):
    """Runs ``harness`` (``oracle``, ``noop`` or a test-model harness) on a task dir."""

    async def check(self, task_dir: Path, harness: str) -> CheckOutcome:
        ...


RolloutFn = Callable[[Path, str], Awaitable[CheckOutcome]]


def _read_reward(logs: Path) -> tuple[float | None, dict[str, Any]]:
    verifier = logs / "verifier"
    detail = read_checks(verifier)
    try:
        return float((verifier / "reward.txt").read_text(encoding="utf-8").strip()), detail
    except (OSError, ValueError):
        return None, detail


async def _run_script(script: Path, cwd: Path, env: dict[str, str], timeout: float, log_file: Path) -> int | None:
    """Run a bash script; returns its exit code, or None on timeout (the process is killed)."""
    with log_file.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            "bash", str(script), cwd=str(cwd), env=env, stdout=out, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            kill_group(proc.pid)
            await proc.wait()
            return None
        except asyncio.CancelledError:  # Ctrl-C: the script's own session would outlive us
            kill_group(proc.pid)
            raise
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # Python 3.11's wait_for drops a cancel that lands as the script exits; honour it.
            raise asyncio.CancelledError
        return code



class LocalChecker:
    """Oracle and no-op checks run here, in a temp workspace against the task's services."""

    def __init__(self, work_root: Path, *, rollout: RolloutFn | None = None, keep_logs: bool = True) -> None:
        self.work_root = Path(work_root)
        self.rollout = rollout
        self.keep_logs = keep_logs

    async def check(self, task_dir: Path, harness: str) -> CheckOutcome:
        if harness not in (ORACLE, NOOP):
            if self.rollout is None:
                raise ValueError(f"checker: no rollout backend wired for harness {harness!r}")
            return await self.rollout(Path(task_dir), harness)
        return await self._local(Path(task_dir), harness)

    async def _local(self, task_dir: Path, harness: str) -> CheckOutcome:
        from environments.claw.process import ClawServer  # noqa: PLC0415 - sibling room, loaded on use
        from environments.taskdir import load_task  # noqa: PLC0415

        start = time.monotonic()
        task = load_task(task_dir)
        root = self.work_root / f"{task_dir.name}-{harness}-{uuid.uuid4().hex[:6]}"
        workspace, logs = root / "workspace", root / "logs"
        for d in (workspace, logs / "agent", logs / "verifier"):
            d.mkdir(parents=True, exist_ok=True)
        seed = task_dir / "environment" / "files"  # the initial workspace (Dockerfile: COPY files/ <WORKDIR>)
        if seed.is_dir():
            await asyncio.to_thread(shutil.copytree, seed, workspace, dirs_exist_ok=True)
        outcome = CheckOutcome(harness=harness, log_path=str(logs))
        server = ClawServer.for_task(task_dir) if task.config.openforge.services else None
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CLAW_")}
            if server is not None:
                await server.astart()
                env.update(server.env())
                env["CLAW_URL"] = server.url
            env.update(
                OPENFORGE_PYTHON=sys.executable,  # oracles that replay a harness's action layer need our deps
                WORKSPACE=str(workspace), LOGS_DIR=str(logs), TESTS_DIR=str(task_dir / "tests"),
                PYTHONPATH=os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p),
            )
            if harness == ORACLE:
                solve = task_dir / "solution" / "solve.sh"
                if not solve.is_file():
                    outcome.status, outcome.error = "policy_error", "solution/solve.sh: missing"
                    return outcome
                rc = await _run_script(solve, workspace, env, task.config.agent.timeout_sec, logs / "agent" / "oracle.log")
                if rc is None:
                    outcome.status, outcome.error = "timeout", "solution/solve.sh: timed out"
                elif rc != 0:
                    outcome.error = f"solution/solve.sh: exit {rc} (see {logs / 'agent' / 'oracle.log'})"
            rc = await _run_script(task_dir / "tests" / "test.sh", workspace, env, task.config.verifier.timeout_sec,
                                   logs / "verifier" / "test.log")
            outcome.reward, outcome.checks = _read_reward(logs)
            if rc is None:
                outcome.status, outcome.error = "timeout", "tests/test.sh: timed out"
            elif outcome.reward is None:
                outcome.status = "infra_error"
                outcome.error = f"tests/test.sh: no reward.txt written (exit {rc}, see {logs / 'verifier' / 'test.log'})"
        except (OSError, RuntimeError, TimeoutError) as exc:
            outcome.status, outcome.error = "infra_error", f"{type(exc).__name__}: {exc}"
        finally:
            if server is not None:
                await server.astop()
            outcome.seconds = time.monotonic() - start
        if not self.keep_logs and outcome.reward is not None and outcome.error is None:
            shutil.rmtree(root, ignore_errors=True)
            outcome.log_path = None
        return outcome
