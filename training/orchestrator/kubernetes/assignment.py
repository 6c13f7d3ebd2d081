"""A rollout's assignment, what its pod's entry gets over the control channel: the runner's
argv and env (task env, token, finish key: never in the pod spec), the task's visible files
and, for the oracle only, the solution."""

from __future__ import annotations

from environments.records import ErrorKind, RolloutSpec
from environments.runner.finish import FINISH_KEY_ENV
from environments.taskdir import TaskDir, TaskDirError, load_task
from training.orchestrator.backend import SandboxError
from training.orchestrator.kubernetes.control import Assignment, tar_dir
from training.orchestrator.kubernetes.images import PodImage
from training.orchestrator.runtime import runner_command
from training.orchestrator.task_support import task_env


def task_or_error(path: str) -> TaskDir:
    """The task dir at ``path``; an invalid one is a ``start_failed`` sandbox error."""
    try:
        return load_task(path)
    except TaskDirError as exc:
        raise SandboxError(f"invalid task dir: {exc}", kind=ErrorKind.start_failed) from exc


def assignment_for(spec: RolloutSpec, task: TaskDir, image: PodImage, *, max_bytes: int) -> Assignment:
    """The assignment of ``spec`` on ``task`` in ``image`` (task tars of at most ``max_bytes``)."""
    oracle = spec.harness == "oracle"
    try:
        task_tar = tar_dir(task.path, skip_top=("tests", "solution"), max_bytes=max_bytes)
        solution = task.path / "solution"
        solution_tar = tar_dir(solution, max_bytes=max_bytes) if oracle and solution.is_dir() else None
    except (OSError, ValueError) as exc:
        raise SandboxError(f"task files of {task.path}: {exc}", kind=ErrorKind.start_failed) from exc
    argv = runner_command(spec, python="python3", task_dir="/task", workspace=image.workdir, logs_dir="/logs",
                          tests_dir="/tests", solution_dir="/solution" if oracle else None,
                          agent_timeout=None, verifier_timeout=None, agent_jail="auto")
    env = dict(spec.env)
    env.update(task_env(task))  # over the control channel, never in the pod spec
    env.update({"OPENFORGE_SANDBOX_ID": spec.rollout_id, "OPENFORGE_MODEL": spec.model})
    if spec.base_url:
        env["OPENFORGE_BASE_URL"] = spec.base_url
    if spec.token:
        env["OPENFORGE_ROLLOUT_TOKEN"] = spec.token
    if spec.finish_key:
        env[FINISH_KEY_ENV] = spec.finish_key
    return Assignment(rollout_id=spec.rollout_id, argv=argv, env=env, workdir=image.workdir, task_tar=task_tar,
                      solution_tar=solution_tar)
