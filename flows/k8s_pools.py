"""Base job templates of OpenForge's Kubernetes work pools (``prefect-kubernetes.yaml``).

Each is prefect-kubernetes' own default template (read from the installed worker, so it
follows the package's version) plus what a flow pod of OpenForge needs:

- the shared data dir: the PersistentVolumeClaim ``data_claim`` (default ``openforge-data``,
  ReadWriteMany) mounted at :data:`DATA_MOUNT` (the deployments set ``OPENFORGE_HOME`` to it);
- settings that are secrets (``OPENFORGE_DB``'s password): every key of the Secret
  ``env_secret`` (default ``openforge-env``) as an environment variable;
- GPU pool only: ``gpu_limit`` ``nvidia.com/gpu`` (default 1) and a memory-backed
  ``/dev/shm`` (NCCL and vLLM outgrow the container runtime's 64 MiB).

``python -m flows.k8s_pools cpu|gpu`` prints one as JSON for
``prefect work-pool create NAME --type kubernetes --base-job-template FILE``.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any, Literal

PoolKind = Literal["cpu", "gpu"]

#: Where the data volume is mounted in a flow pod (the deployments' ``OPENFORGE_HOME``).
DATA_MOUNT = "/data/openforge"


def _variable(kind: str, default: Any, title: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "default": default, "title": title, "description": description, **extra}


def base_job_template(kind: PoolKind) -> dict[str, Any]:
    """The base job template of the ``kind`` pool (``cpu`` or ``gpu``)."""
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"pool kind {kind!r}: expected cpu or gpu")
    from prefect_kubernetes.worker import KubernetesWorker  # the k8s extra

    template = copy.deepcopy(KubernetesWorker.get_default_base_job_template())
    variables = template["variables"]["properties"]
    pod = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    variables["data_claim"] = _variable(
        "string", "openforge-data", "Data volume claim",
        f"PersistentVolumeClaim (ReadWriteMany) mounted at {DATA_MOUNT}: task dirs, checkpoints, runs.")
    variables["env_secret"] = _variable(
        "string", "openforge-env", "Environment Secret",
        "Secret whose keys become environment variables of the flow pod (OPENFORGE_DB and other credentials).")
    pod["volumes"] = [{"name": "openforge-data", "persistentVolumeClaim": {"claimName": "{{ data_claim }}"}}]
    container["volumeMounts"] = [{"name": "openforge-data", "mountPath": DATA_MOUNT}]
    container["envFrom"] = [{"secretRef": {"name": "{{ env_secret }}"}}]
    if kind == "gpu":
        variables["gpu_limit"] = _variable(
            "integer", 1, "GPUs", "nvidia.com/gpu devices of the flow pod (vLLM engine, trainer).", minimum=1)
        container["resources"].setdefault("limits", {})["nvidia.com/gpu"] = "{{ gpu_limit }}"
        pod["volumes"].append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
        container["volumeMounts"].append({"name": "dshm", "mountPath": "/dev/shm"})
    return template


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("cpu", "gpu"):
        print("usage: python -m flows.k8s_pools cpu|gpu  (prints the pool's base job template as JSON)",
              file=sys.stderr)
        return 2
    print(json.dumps(base_job_template(args[0]), indent=2))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
