"""What a backend can run of a Harbor task, and the task's host-side env (issue 16).

- ``[environment] docker_image`` without a Dockerfile (image-only) and
  ``environment/docker-compose.yaml`` (compose) tasks need a container engine: the docker
  backend runs them; the others refuse in one line saying so.
- multi-step tasks (``[[steps]]``) run on local and docker (each step's tests copied on the
  runner's ``agent_done step=<name>`` line); Kubernetes refuses them in one line.
- ``[environment].env`` / ``[verifier].env`` / ``[solution].env`` are resolved on the host
  (``${VAR}``, ``${VAR:-default}``) and handed to the runner (``envvars.PHASE_ENV``).
- ``[agent] user`` / ``[verifier] user``: honoured where the runner can switch users (docker
  with a root runner: :func:`task_users`), else noted on the rollout (:func:`not_honoured`).
"""

from __future__ import annotations

from environments.records import ErrorKind
from environments.taskdir import TaskDir
from environments.taskdir.envvars import EnvTemplateError, encode, phase_env
from training.orchestrator.backend import SandboxError

#: Backends with a container engine for image-only / compose tasks.
CONTAINER_BACKENDS = ("docker",)
#: Backends whose runner protocol copies each step's tests (``agent_done step=<name>``).
MULTI_STEP_BACKENDS = ("local", "docker")


def check_supported(task: TaskDir, backend: str) -> None:
    """Raise :class:`SandboxError` (``start_failed``, one line) for what ``backend`` cannot run."""
    cfg = task.config
    if cfg.environment.os == "windows":
        raise SandboxError(f"{task.path}: [environment] os = 'windows': Windows tasks are not supported "
                           "(OpenForge sandboxes run Linux)", kind=ErrorKind.start_failed)
    if cfg.steps and backend not in MULTI_STEP_BACKENDS:
        raise SandboxError(f"{task.path}: [[steps]]: multi-step tasks run on the local and docker backends, "
                           f"not {backend}", kind=ErrorKind.start_failed)
    if backend in CONTAINER_BACKENDS:
        return
    if task.compose_file is not None and not task.dockerfile.is_file():
        raise SandboxError(f"{task.path}: environment/docker-compose.yaml: compose tasks need the docker backend "
                           f"(--backend docker), not {backend}", kind=ErrorKind.start_failed)
    if task.docker_image:
        raise SandboxError(f"{task.path}: [environment] docker_image = {task.docker_image!r}: image-only tasks "
                           f"need the docker backend (--backend docker), not {backend}", kind=ErrorKind.start_failed)


_ROOT_NAMES = ("root", "0")


def task_users(task: TaskDir, agent_uid: int | None) -> tuple[str | None, str | None, list[str]]:
    """(agent user, verifier user, notes) for a runner that can switch users (root, the
    ``uid`` agent jail with ``agent_uid``): both passed on as written (the runner resolves
    them in the image's /etc/passwd), except a root agent, which stays on ``agent_uid``
    (the jail works by uid: a root agent could reach the verifier); per-step users are noted."""
    cfg, notes = task.config, []
    agent = None if cfg.agent.user is None else str(cfg.agent.user)
    if agent is not None and agent.partition(":")[0] in _ROOT_NAMES:
        notes.append(f"[agent] user = {cfg.agent.user!r}: the agent runs as the jail's uid {agent_uid}, never root "
                     "(it could reach the verifier)")
        agent = None
    verifier = None if cfg.verifier.user is None else str(cfg.verifier.user)
    notes += _step_user_notes(task)
    return agent, verifier, notes


def _step_user_notes(task: TaskDir) -> list[str]:
    return [f"[[steps]] {step.name}: {phase} user = {section.user!r}: per-step users are not honoured "
            "(the task's own is used)"
            for step in task.config.steps or [] for phase, section in (("agent", step.agent), ("verifier", step.verifier))
            if section.user is not None]


def not_honoured(task: TaskDir, backend: str, *, switches_users: bool = False) -> list[str]:
    """Harbor fields this backend reads but cannot honour, one note each (never silent).
    ``switches_users``: the runner honours ``[agent]``/``[verifier] user`` (:func:`task_users`
    notes what it cannot)."""
    cfg, notes = task.config, []
    if not switches_users:
        if cfg.agent.user is not None:
            notes.append(f"[agent] user = {cfg.agent.user!r}: the agent runs as the sandbox's agent uid")
        if cfg.verifier.user is not None:
            notes.append(f"[verifier] user = {cfg.verifier.user!r}: the verifier runs as the runner's user")
        notes += _step_user_notes(task)
    modes = {cfg.environment.network_mode, cfg.agent.network_mode, cfg.verifier.network_mode} - {None, "no-network"}
    if modes:
        notes.append(f"network_mode {sorted(modes)}: sandboxes have no network but the proxy relay")
    if cfg.environment.gpus and backend != "kubernetes":
        notes.append(f"[environment] gpus = {cfg.environment.gpus}: no GPUs are given to {backend} sandboxes")
    return notes


def task_env(task: TaskDir) -> dict[str, str]:
    """The sandbox env entry carrying the task's resolved env tables (empty when it has none)."""
    try:
        return encode(phase_env(task.config))
    except EnvTemplateError as exc:
        raise SandboxError(f"{task.path}: {exc}", kind=ErrorKind.start_failed) from None
