"""What every backend launches inside a sandbox: the runner command line and its env.

The runner is ``python -P -m environments.runner`` (docs/CONTRACTS.md); when the proxy
is reached through the unix-socket relay, ``sandbox_init.py`` runs first (by path, stdlib
only) and execs the runner once the relay's port is listening.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from environments.records import RolloutSpec
from environments.runner.finish import FINISH_KEY_ENV
from environments.taskdir.envvars import encode as encode_phase_env
from training.orchestrator.config import get_orchestrator_settings
from training.orchestrator.procs import SANDBOX_ENV

SANDBOX_INIT = Path(__file__).with_name("sandbox_init.py")
#: The checkout whose code runs in the sandbox (bound read-only by every backend).
REPO_ROOT = Path(__file__).resolve().parents[2]
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Host env vars passed into sandboxes (never API keys: the rollout token is the only credential).
PASS_ENV = ("OPENFORGE_TOOLS_DIR", "OPENFORGE_LOG_LEVEL", "TZ")


#: Every sandbox's own host name (its UTS namespace), not the machine's.
SANDBOX_HOSTNAME = "sandbox"


def runtime_paths() -> list[str]:
    """Host paths the runner needs (interpreter, venv, this checkout, harness tools), outermost
    first; a path inside another listed one is left out. Backends bind them read-only at the
    same place."""
    from environments.harnesses.binaries import tools_dir

    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix), REPO_ROOT}
    if tools_dir().is_dir():
        paths.add(tools_dir())
    kept: list[Path] = []
    for p in sorted(paths, key=lambda q: len(q.parts)):
        if not any(k == p or k in p.parents for k in kept):
            kept.append(p)
    return [str(p) for p in kept]


def sandbox_python() -> str:
    return get_orchestrator_settings().sandbox_python or sys.executable


def runner_command(
    spec: RolloutSpec,
    *,
    python: str,
    task_dir: str,
    workspace: str,
    logs_dir: str,
    tests_dir: str,
    solution_dir: str | None,
    agent_timeout: float | None,
    verifier_timeout: float | None,
    agent_jail: str | None = None,
    agent_uid: int | None = None,
    agent_user: str | None = None,
    verifier_user: str | None = None,
    wait_for: str | None = None,
) -> list[str]:
    cmd = [python, "-P", "-m", "environments.runner", "--task-dir", task_dir, "--harness", spec.harness,
           "--workspace", workspace, "--logs-dir", logs_dir, "--tests-dir", tests_dir]
    if solution_dir:
        cmd += ["--solution-dir", solution_dir]
    if spec.base_url:
        cmd += ["--base-url", spec.base_url]
    if spec.token:
        cmd += ["--token", spec.token]
    if spec.model:
        cmd += ["--model", spec.model]
    if spec.harness_options:
        cmd += ["--harness-options", json.dumps(spec.harness_options)]
    if agent_timeout:
        cmd += ["--agent-timeout", f"{agent_timeout:g}"]
    if verifier_timeout:
        cmd += ["--verifier-timeout", f"{verifier_timeout:g}"]
    if agent_jail:
        cmd += ["--agent-jail", agent_jail]
    if agent_uid is not None:
        cmd += ["--agent-uid", str(agent_uid)]
    if agent_user is not None:
        cmd += ["--agent-user", agent_user]
    if verifier_user is not None:
        cmd += ["--verifier-user", verifier_user]
    if wait_for is not None:
        cmd += ["--wait-for", wait_for]
    return cmd


def with_relay(cmd: list[str], *, python: str, host: str, port: int, unix_path: str, init_path: str | None = None) -> list[str]:
    return [python, "-P", init_path or str(SANDBOX_INIT), "--listen", f"{host}:{port}", "--unix", unix_path, "--", *cmd]


def sandbox_env(spec: RolloutSpec, *, dockerfile_env: dict[str, str], home: str, extra: dict[str, str] | None = None,
                phases: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """A fresh environment for the sandbox: no host secrets, only what the rollout needs.
    ``phases``: the task's env tables resolved on the host (``envvars.phase_env``), handed to
    the runner as one variable that it takes out before anything starts."""
    env = {"PATH": BASE_PATH, "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
    for key in PASS_ENV:
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(dockerfile_env)
    env.update(spec.env)
    env.update(extra or {})
    if spec.base_url:
        env["OPENFORGE_BASE_URL"] = spec.base_url
    if spec.token:
        env["OPENFORGE_ROLLOUT_TOKEN"] = spec.token
    if spec.finish_key:  # by environment only (a command line is readable from the agent's jail)
        env[FINISH_KEY_ENV] = spec.finish_key
    if spec.model:
        env["OPENFORGE_MODEL"] = spec.model
    env[SANDBOX_ENV] = spec.rollout_id
    env.update(encode_phase_env(phases or {}))
    # The runner, harnesses and oracles import this checkout's packages: name it explicitly
    # rather than trusting whichever editable install the interpreter happens to point at.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env
