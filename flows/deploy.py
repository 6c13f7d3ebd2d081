"""Deploying the flows to a Prefect server: work pool, global concurrency limits, prefect.yaml."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)

#: Global concurrency limits for paid APIs, used with ``strict=True`` by the tasks that call them.
PAID_API_LIMITS = {"anthropic-api": 4, "openai-api": 8}


async def ensure_concurrency_limits(limits: dict[str, int] | None = None) -> list[str]:
    """Create the paid-API global concurrency limits that do not exist yet (idempotent)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    created = []
    async with get_client() as client:
        for name, limit in (limits or PAID_API_LIMITS).items():
            try:
                await client.read_global_concurrency_limit_by_name(name)
                continue
            except ObjectNotFound:
                pass
            try:
                await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=limit))
                created.append(name)
            except ObjectAlreadyExists:
                pass
    return created


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
    out.append("concurrency limits created: " + (", ".join(asyncio.run(ensure_concurrency_limits())) or "none (all exist)"))
    deployed = _prefect("--no-prompt", "deploy", "--all", cwd=repo_root)
    if deployed.returncode != 0:
        raise SystemExit(f"prefect deploy failed:\n{deployed.stdout}\n{deployed.stderr}")
    out += [line for line in deployed.stdout.splitlines() if "Deployment" in line]
    return out
