"""Deploying the flows to a Prefect server: work pools, paid-API limits, ``prefect.yaml``.

``prefect.yaml`` puts CPU work (synthesis, oracle distillation, evaluation) on the process pool
:data:`CPU_POOL` and training (rl-train, sft-train, the pipeline) on :data:`GPU_POOL`. Other
pool names are deployed from a copy of the file with the names replaced (``prefect deploy
--all`` ignores ``--pool``). The Kubernetes variant is ``prefect-kubernetes.yaml``
(configs/k8s/prefect-kubernetes.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from flows.limits import ensure_paid_api_limits

#: The process pools named in prefect.yaml.
CPU_POOL = "openforge-cpu"
GPU_POOL = "openforge-gpu"


def _prefect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("prefect")
    env = {**os.environ, "PWD": str(cwd)}  # prefect.yaml's pull step is "{{ $PWD }}": the checkout
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600,
                          check=False)


def with_pools(config: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A prefect.yaml document whose deployments' work pools are renamed by ``names`` (old → new)."""
    out = dict(config)
    out.pop("definitions", None)  # anchors are already resolved into each deployment
    out["deployments"] = []
    for deployment in config.get("deployments", []):
        deployment = dict(deployment)
        pool = dict(deployment.get("work_pool") or {})
        if pool.get("name") in names:
            pool["name"] = names[pool["name"]]
        deployment["work_pool"] = pool
        out["deployments"].append(deployment)
    return out


def deploy_all(repo_root: Path, cpu_pool: str = CPU_POOL, gpu_pool: str = GPU_POOL) -> list[str]:
    """Process work pools + paid-API limits + every deployment of prefect.yaml; returns lines to show."""
    import yaml  # Prefect's own dependency

    if not os.environ.get("PREFECT_API_URL"):
        raise SystemExit("deploy: set PREFECT_API_URL to your Prefect server (e.g. http://127.0.0.1:4200/api)")
    out = []
    for pool in dict.fromkeys((cpu_pool, gpu_pool)):
        made = _prefect("work-pool", "create", pool, "--type", "process", cwd=repo_root)
        out.append(f"work pool {pool}: " + ("created" if made.returncode == 0 else "exists"))
    out += [state.line() for state in ensure_paid_api_limits()]
    with tempfile.TemporaryDirectory(prefix="openforge-deploy-") as tmp:
        prefect_file = repo_root / "prefect.yaml"
        if (cpu_pool, gpu_pool) != (CPU_POOL, GPU_POOL):
            config = yaml.safe_load(prefect_file.read_text())
            prefect_file = Path(tmp) / "prefect.yaml"
            prefect_file.write_text(yaml.safe_dump(with_pools(config, {CPU_POOL: cpu_pool, GPU_POOL: gpu_pool})))
        deployed = _prefect("--no-prompt", "deploy", "--all", "--prefect-file", str(prefect_file), cwd=repo_root)
    if deployed.returncode != 0:
        raise SystemExit(f"prefect deploy failed:\n{deployed.stdout}\n{deployed.stderr}")
    out += [line for line in deployed.stdout.splitlines() if "Deployment" in line]
    return out
