"""The runner's command line (docs/CONTRACTS.md) and where the sandbox paths default to.

Paths default to the Harbor locations (/logs, /tests, /solution, cwd as the workspace);
in the plain-process fallback the backend passes them explicitly (or exports
``OPENFORGE_SANDBOX_ROOT``, ``LOGS_DIR``, ``TESTS_DIR``, ``WORKSPACE``).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunnerOptions:
    task_dir: Path
    harness: str
    workspace: Path
    logs_dir: Path
    tests_dir: Path
    solution_dir: Path | None = None
    base_url: str | None = None
    token: str | None = None
    model: str = "policy"
    harness_options: dict[str, Any] = field(default_factory=dict)
    agent_timeout: float | None = None  # None: task.toml [agent] timeout_sec
    verifier_timeout: float | None = None  # None: task.toml [verifier] timeout_sec
    service_timeout: float = 60.0
    agent_jail: str = "none"  # environments/runner/jail.py: auto | userns | uid | none (backends choose)
    agent_uid: int | None = None  # the harness's uid in a ``uid`` jail
    #: task.toml ``[agent] user`` / ``[verifier] user`` to honour (name or uid, resolved in the
    #: sandbox's /etc/passwd; environments/runner/users.py). The backend passes them only where
    #: it can: the agent's needs the ``uid`` jail, the verifier's a root runner.
    agent_user: str | None = None
    verifier_user: str | None = None
    #: A file to wait for before anything starts (a compose main's ``depends_on``: the backend
    #: writes it once the sidecars meet their conditions).
    wait_for: Path | None = None


def _root_default(env_name: str, sub: str, harbor: str) -> Path:
    if os.environ.get(env_name):
        return Path(os.environ[env_name])
    root = os.environ.get("OPENFORGE_SANDBOX_ROOT")
    return Path(root) / sub if root else Path(harbor)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m environments.runner",
                                description="Run one rollout inside a sandbox: services → harness → verifier.")
    p.add_argument("--task-dir", type=Path, required=True)
    p.add_argument("--harness", required=True)
    p.add_argument("--workspace", type=Path)
    p.add_argument("--logs-dir", type=Path)
    p.add_argument("--tests-dir", type=Path)
    p.add_argument("--solution-dir", type=Path)
    p.add_argument("--base-url", default=os.environ.get("OPENFORGE_BASE_URL"))
    p.add_argument("--token", default=os.environ.get("OPENFORGE_ROLLOUT_TOKEN"))
    p.add_argument("--model", default=os.environ.get("OPENFORGE_MODEL", "policy"))
    p.add_argument("--harness-options", default="{}", help="JSON object of adapter options")
    p.add_argument("--agent-timeout", type=float)
    p.add_argument("--verifier-timeout", type=float)
    p.add_argument("--service-timeout", type=float, default=60.0)
    p.add_argument("--agent-jail", choices=("auto", "userns", "uid", "none"), default="none",
                   help="where the harness runs (environments/runner/jail.py)")
    p.add_argument("--agent-uid", type=int, help="the harness's uid with --agent-jail uid")
    p.add_argument("--agent-user", help="run the harness as this sandbox user (name, uid, user:group; needs --agent-jail uid)")
    p.add_argument("--wait-for", type=Path, help="wait for this file before starting (compose depends_on)")
    p.add_argument("--verifier-user", help="run tests/test.sh as this sandbox user (name, uid, user:group; needs a root runner)")
    return p


def parse_options(argv: list[str] | None = None) -> RunnerOptions:
    p = parser()
    a = p.parse_args(argv)
    try:
        hopts = json.loads(a.harness_options)
    except json.JSONDecodeError as exc:
        p.error(f"--harness-options: invalid JSON ({exc})")
    if not isinstance(hopts, dict):
        p.error("--harness-options: expected a JSON object")
    workspace = a.workspace or _root_default("WORKSPACE", "workspace", os.getcwd())
    solution = a.solution_dir
    if solution is None:
        for candidate in (_root_default("SOLUTION_DIR", "solution", "/solution"), a.task_dir / "solution"):
            if (candidate / "solve.sh").is_file():
                solution = candidate
                break
    return RunnerOptions(
        task_dir=a.task_dir.resolve(), harness=a.harness, workspace=workspace.resolve(),
        logs_dir=(a.logs_dir or _root_default("LOGS_DIR", "logs", "/logs")).resolve(),
        tests_dir=(a.tests_dir or _root_default("TESTS_DIR", "tests", "/tests")).resolve(),
        solution_dir=solution.resolve() if solution else None,
        base_url=a.base_url or None, token=a.token or None, model=a.model, harness_options=hopts,
        agent_timeout=a.agent_timeout, verifier_timeout=a.verifier_timeout, service_timeout=a.service_timeout,
        agent_jail=a.agent_jail, agent_uid=a.agent_uid, agent_user=a.agent_user or None,
        verifier_user=a.verifier_user or None, wait_for=a.wait_for,
    )
