"""Sandbox directory layout on the host (docs/CONTRACTS.md).

``<rollouts_dir>/<rollout_id>/`` holds ``sandbox/`` (removed at cleanup: ``task/`` without
tests/ and solution/, ``workspace/``, ``tests/`` empty until the agent is done,
``solution/`` for the oracle only, ``home/``, ``files/`` for COPY targets) and what is kept
afterwards: ``logs/`` (bound at ``/logs``) and ``runner.log`` (the runner's stdout+stderr).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from environments.records import ErrorKind, RolloutSpec
from environments.taskdir import TaskDir, TaskDirError, load_task
from training.orchestrator.backend import SandboxError

#: Top-level task entries the agent must not see during its phase.
HIDDEN_TASK_ENTRIES = ("tests", "solution")
ORACLE_HARNESSES = ("oracle",)


@dataclass(frozen=True)
class SandboxDirs:
    base: Path  # rollouts_dir/<rollout_id>

    @property
    def sandbox(self) -> Path:
        return self.base / "sandbox"

    @property
    def task(self) -> Path:
        return self.sandbox / "task"

    @property
    def workspace(self) -> Path:
        return self.sandbox / "workspace"

    @property
    def tests(self) -> Path:
        return self.sandbox / "tests"

    @property
    def solution(self) -> Path:
        return self.sandbox / "solution"

    @property
    def home(self) -> Path:
        return self.sandbox / "home"

    @property
    def files(self) -> Path:
        return self.sandbox / "files"

    @property
    def logs(self) -> Path:
        return self.base / "logs"

    @property
    def runner_log(self) -> Path:
        return self.base / "runner.log"


def lay_out(base: Path, task_dir: Path, harness: str) -> SandboxDirs:
    """Create the sandbox dirs for one rollout and copy the visible task files in."""
    dirs = SandboxDirs(base)
    if dirs.sandbox.exists():
        shutil.rmtree(dirs.sandbox)
    for d in (dirs.workspace, dirs.tests, dirs.home, dirs.files, dirs.logs / "agent", dirs.logs / "verifier"):
        d.mkdir(parents=True, exist_ok=True)
    steps = task_dir / "steps"

    def hidden(src: str, names: list[str]) -> list[str]:
        here = Path(src)
        top = here == task_dir or here.parent == steps  # a multi-step task's steps/<name>/ too
        return [n for n in names if top and n in HIDDEN_TASK_ENTRIES] + [n for n in names if n in ("__pycache__", ".git")]

    shutil.copytree(task_dir, dirs.task, ignore=hidden)
    if harness in ORACLE_HARNESSES and (task_dir / "solution").is_dir():
        shutil.copytree(task_dir / "solution", dirs.solution)
    else:
        dirs.solution.mkdir()
    if harness in ORACLE_HARNESSES and steps.is_dir():  # each step's oracle at solution/steps/<name>/
        for step in sorted(p for p in steps.iterdir() if (p / "solution").is_dir()):
            shutil.copytree(step / "solution", dirs.solution / "steps" / step.name)
    return dirs


def copy_tests(task_dir: Path, dest: Path, *, owner: int | None = None, step: str | None = None) -> None:
    """Copy the task's tests into ``dest`` with ``test.sh`` appearing last and atomically
    (the runner starts the verifier as soon as it sees ``test.sh``); with ``owner``, every
    file is handed over to that uid before ``test.sh`` appears (:func:`hand_over`). With
    ``step`` (a multi-step task): ``steps/<step>/tests`` (else the shared ``tests/``), and
    ``dest`` emptied first (the previous step's tests go)."""
    src = task_dir / "tests"
    if step is not None:
        own = task_dir / "steps" / step / "tests"
        if own.resolve().parent.parent.parent == task_dir.resolve() and own.is_dir():
            src = own
        if dest.is_dir():
            for entry in dest.iterdir():
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    if not src.is_dir():
        return
    dest.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        if entry.name == "test.sh":
            continue
        target = dest / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, target)
    script = src / "test.sh"
    if script.exists():
        tmp = dest / ".test.sh.partial"
        shutil.copy2(script, tmp)
        os.chmod(tmp, 0o755)
        if owner:
            hand_over([dest], owner)
        os.replace(tmp, dest / "test.sh")
    elif owner:
        hand_over([dest], owner)


def hand_over(paths: list[Path], uid: int) -> None:
    """Make ``paths`` (recursively) ``uid``'s, so a container running as ``uid`` can write its
    bind-mounted dirs. Only root may chown; as anyone else the agent runs as us already."""
    if os.getuid() != 0 or uid == 0:
        return
    for path in paths:
        os.chown(path, uid, uid)
        for root, dnames, fnames in os.walk(path):
            for name in dnames + fnames:
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def remove_sandbox(dirs: SandboxDirs) -> None:
    """Remove the sandbox part of a rollout dir (logs are kept)."""
    if dirs.sandbox.exists():
        shutil.rmtree(dirs.sandbox, ignore_errors=True)
    if dirs.sandbox.exists():  # read-only bits left by the agent
        for root, dnames, fnames in os.walk(dirs.sandbox):
            for name in dnames + fnames:
                try:
                    os.chmod(os.path.join(root, name), 0o700)
                except OSError:
                    pass
        shutil.rmtree(dirs.sandbox, ignore_errors=True)


def sized_for(task: TaskDir, spec: RolloutSpec) -> TaskDir:
    """``task`` with the rollout's sandbox size (``spec.cpus`` / ``spec.memory_mb``) in place
    of the task's own, where the run sets one."""
    update = {k: v for k, v in (("cpus", spec.cpus), ("memory_mb", spec.memory_mb)) if v is not None}
    if not update:
        return task
    environment = task.config.environment.model_copy(update=update)
    return replace(task, config=task.config.model_copy(update={"environment": environment}))


def load_and_lay_out(spec: RolloutSpec, rollouts_dir: Path) -> tuple[TaskDir, Path, SandboxDirs]:
    """The first step of every backend's ``start``: load the task dir (an invalid one is a
    ``start_failed`` sandbox error), size it for the rollout and lay out the sandbox under
    ``rollouts_dir/<id>``."""
    try:
        task = sized_for(load_task(spec.task_dir), spec)
    except TaskDirError as exc:
        raise SandboxError(f"invalid task dir: {exc}", kind=ErrorKind.start_failed) from exc
    base = rollouts_dir / spec.rollout_id
    return task, base, lay_out(base, task.path, spec.harness)
