"""Deploying the flows to a Prefect server: work pool, paid-API limits (flows/limits.py), prefect.yaml."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from flows.limits import ensure_paid_api_limits

log = logging.getLogger(__name__)


def _prefect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("prefect")
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, env=os.environ.copy(), timeout=600)


def deploy_all(repo_root: Path, pool: str = "openforge-process") -> list[str]:
    """Work pool + limits + ``prefect --no-prompt deploy --all``; returns lines to show."""
    if not os.environ.get("PREFECT_API_URL"):
        raise SystemExit("deploy: set PREFECT_API_URL to your Prefect server (e.g. http://127.0.0.1:4200/api)")
    out = []
    made = _prefect("work-pool", "create", pool, "--type", "process", cwd=repo_root)
    out.append(f"work pool {pool}: " + ("created" if made.returncode == 0 else "exists"))
    out += [state.line() for state in ensure_paid_api_limits()]
    deployed = _prefect("--no-prompt", "deploy", "--all", cwd=repo_root)
    if deployed.returncode != 0:
        raise SystemExit(f"prefect deploy failed:\n{deployed.stdout}\n{deployed.stderr}")
    out += [line for line in deployed.stdout.splitlines() if "Deployment" in line]
    return out
