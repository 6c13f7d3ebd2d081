"""Pure builders of the Kubernetes objects of a run: its owner, pods, secrets, NetworkPolicy.

Nothing here talks to a cluster; every function returns plain dicts in the API's JSON
shape (what ``kubectl get -o json`` shows), so tests read them without a server.

A rollout pod (see the package doc for why it looks like this):

- ``initContainers``: ``runtime`` (the OpenForge runtime image copies ``/opt/openforge``
  into an emptyDir) and ``workdir`` (the task image copies its WORKDIR into an emptyDir,
  so the workspace is writable under a read-only root filesystem);
- ``containers[0]`` ``sandbox``: the task image running ``pod_entry.py`` from the runtime;
  requests = limits = task.toml ``[environment]`` cpus/memory_mb/storage_mb (and ``gpus`` as
  ``nvidia.com/gpu``);
- ``restartPolicy: Never``, ``activeDeadlineSeconds`` = the rollout's timeout, no service
  account token, no service links, labels run/rollout/task, an ownerReference to the run's
  owner ConfigMap, and a restricted security context (non-root, no privilege escalation,
  read-only root, ALL capabilities dropped, RuntimeDefault seccomp).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from dataclasses import dataclass, field
from typing import Any

from environments.runner.finish import FINISH_KEY_ENV

MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_INSTANCE = "openforge.dev/instance"
LABEL_RUN = "openforge.dev/run"
LABEL_ROLLOUT = "openforge.dev/rollout"
LABEL_TASK = "openforge.dev/task"
LABEL_POOL = "openforge.dev/pool"
LABEL_IMAGE = "openforge.dev/image"
ANNOTATION_TASK = "openforge.dev/task-id"
CONTAINER = "sandbox"
SECRET_POD_KEY = "pod-key"
SECRET_TOKEN = "rollout-token"
SECRET_FINISH_KEY = "finish-key"  # the runner's key for its finish report (environments/runner/finish.py)

#: Harbor paths, each an emptyDir in the pod (name -> mount path).
EMPTY_DIRS = {"task": "/task", "logs": "/logs", "tests": "/tests", "solution": "/solution", "tmp": "/tmp",
              "var-tmp": "/var/tmp", "run": "/run"}

_LABEL_OK = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


def label_value(text: str | None) -> str:
    """``text`` as a valid label value (≤ 63 chars of ``[A-Za-z0-9_.-]``, alphanumeric ends);
    anything rewritten gets a short hash suffix so distinct inputs stay distinct."""
    if not text:
        return ""
    if _LABEL_OK.match(text):
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")[:50].strip("-_.")
    return f"{clean}-{digest}" if clean else digest


def pod_name(kind: str, ident: str) -> str:
    """``openforge-<kind>-<ident>`` as a DNS-1123 label (≤ 63 chars)."""
    ident = re.sub(r"[^a-z0-9-]+", "-", ident.lower()).strip("-")
    return f"openforge-{kind}-{ident}"[:63].rstrip("-")


def image_label(image: str) -> str:
    return hashlib.sha256(image.encode()).hexdigest()[:20]


#: The extended resource a task's ``[environment] gpus`` requests (the NVIDIA device plugin's).
GPU_RESOURCE = "nvidia.com/gpu"

@dataclass(frozen=True)
class OwnerRef:
    """The run's owner object (a ConfigMap): deleting it garbage-collects the run's objects."""

    name: str
    uid: str

    def as_dict(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": self.name, "uid": self.uid,
                "controller": False, "blockOwnerDeletion": False}


@dataclass
class PodPlan:
    """Everything that varies between rollout pods."""

    name: str
    image: str
    workdir: str
    labels: dict[str, str]
    secret_name: str
    control_url: str
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 10240
    #: ``[environment] gpus``: ``nvidia.com/gpu`` requested and limited (None: no GPU).
    gpus: int | None = None
    deadline_seconds: float | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def base_labels(instance: str, run_id: str) -> dict[str, str]:
    return {MANAGED_BY: "openforge", LABEL_INSTANCE: label_value(instance), LABEL_RUN: label_value(run_id)}


def owner_configmap(name: str, namespace: str, labels: dict[str, str], data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}, "data": dict(data)}


def pod_secret(name: str, namespace: str, labels: dict[str, str], owner: OwnerRef | None,
               values: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if owner is not None:
        meta["ownerReferences"] = [owner.as_dict()]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta, "stringData": dict(values)}


def _quantity_cpu(cpus: float) -> str:
    return f"{max(1, math.ceil(cpus * 1000))}m"


def _container_security(run_as_user: int, read_only_root: bool = True) -> dict[str, Any]:
    return {"runAsNonRoot": True, "runAsUser": run_as_user, "runAsGroup": run_as_user,
            "allowPrivilegeEscalation": False, "privileged": False, "readOnlyRootFilesystem": read_only_root,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def rollout_pod(plan: PodPlan, *, namespace: str, owner: OwnerRef | None, runtime_image: str,
                runtime_dir: str, runtime_python: str, run_as_user: int = 65532,
                image_pull_policy: str = "IfNotPresent", image_pull_secrets: list[str] | None = None,
                service_account: str | None = None, node_selector: dict[str, str] | None = None,
                tolerations: list[dict[str, Any]] | None = None, grace_seconds: int = 5) -> dict[str, Any]:
    """The Pod of one sandbox (cold rollout or warm-pool pod)."""
    workdir = plan.workdir.rstrip("/") or "/app"
    if not workdir.startswith("/") or workdir in EMPTY_DIRS.values() or workdir == runtime_dir:
        raise ValueError(f"pod {plan.name}: workdir {plan.workdir!r} must be an absolute path other than the Harbor dirs")
    entry = f"{runtime_dir}/repo/training/orchestrator/kubernetes/pod_entry.py"
    resources = {"cpu": _quantity_cpu(plan.cpus), "memory": f"{int(plan.memory_mb)}Mi",
                 "ephemeral-storage": f"{int(plan.storage_mb)}Mi"}
    if plan.gpus:
        resources[GPU_RESOURCE] = str(int(plan.gpus))
    env = [
        {"name": "OPENFORGE_CONTROL_URL", "value": plan.control_url},
        {"name": "OPENFORGE_POD_KEY", "valueFrom": {"secretKeyRef": {"name": plan.secret_name, "key": SECRET_POD_KEY}}},
        {"name": "OPENFORGE_ROLLOUT_TOKEN",
         "valueFrom": {"secretKeyRef": {"name": plan.secret_name, "key": SECRET_TOKEN, "optional": True}}},
        {"name": FINISH_KEY_ENV,
         "valueFrom": {"secretKeyRef": {"name": plan.secret_name, "key": SECRET_FINISH_KEY, "optional": True}}},
        {"name": "OPENFORGE_RUNTIME_DIR", "value": runtime_dir},
        {"name": "OPENFORGE_TOOLS_DIR", "value": f"{runtime_dir}/tools"},
        {"name": "PYTHONPATH", "value": f"{runtime_dir}/repo"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "OPENFORGE_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ] + [{"name": k, "value": v} for k, v in sorted(plan.env.items())]
    mounts = [{"name": "runtime", "mountPath": runtime_dir, "readOnly": True},
              {"name": "workdir", "mountPath": workdir}]
    mounts += [{"name": name, "mountPath": path} for name, path in EMPTY_DIRS.items()]
    volumes: list[dict[str, Any]] = [{"name": "runtime", "emptyDir": {}}, {"name": "workdir", "emptyDir": {}}]
    volumes += [{"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"} if name == "run" else {}}
                for name in EMPTY_DIRS]
    security = _container_security(run_as_user)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": grace_seconds,
        "securityContext": {"runAsNonRoot": True, "runAsUser": run_as_user, "runAsGroup": run_as_user,
                            "fsGroup": run_as_user, "seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [
            {"name": "runtime", "image": runtime_image, "imagePullPolicy": image_pull_policy,
             "command": ["sh", "-c", f"cp -a {runtime_dir}/. /mnt/runtime/"],
             "volumeMounts": [{"name": "runtime", "mountPath": "/mnt/runtime"}],
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
             "securityContext": security},
            {"name": "workdir", "image": plan.image, "imagePullPolicy": image_pull_policy,
             "command": ["sh", "-c", f"if [ -d {workdir} ]; then cp -a {workdir}/. /mnt/workdir/; fi"],
             "volumeMounts": [{"name": "workdir", "mountPath": "/mnt/workdir"}],
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
             "securityContext": security},
        ],
        "containers": [{
            "name": CONTAINER, "image": plan.image, "imagePullPolicy": image_pull_policy,
            "command": [runtime_python, "-P", entry], "workingDir": workdir, "env": env,
            "resources": {"requests": dict(resources), "limits": dict(resources)},
            "volumeMounts": mounts, "securityContext": security,
        }],
        "volumes": volumes,
    }
    if plan.deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = max(1, math.ceil(plan.deadline_seconds))
    if service_account:
        spec["serviceAccountName"] = service_account
    if image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in image_pull_secrets]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    meta: dict[str, Any] = {"name": plan.name, "namespace": namespace, "labels": dict(plan.labels),
                            "annotations": dict(plan.annotations)}
    if owner is not None:
        meta["ownerReferences"] = [owner.as_dict()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@dataclass(frozen=True)
class EgressTarget:
    """A destination rollout pods may reach: an IP (or CIDR) and a TCP port."""

    cidr: str
    port: int


def egress_targets(host: str, port: int, resolved: list[str]) -> list[EgressTarget]:
    """``host`` itself when it is an IP, else each of its ``resolved`` addresses (/32 or /128)."""
    try:
        ips = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        ips = [ipaddress.ip_address(a) for a in resolved]
    return [EgressTarget(f"{ip}/{32 if ip.version == 4 else 128}", port) for ip in ips]


def network_policy(name: str, namespace: str, labels: dict[str, str], pod_selector: dict[str, str],
                   targets: list[EgressTarget], *, allow_dns: bool, owner: OwnerRef | None,
                   extra_rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Deny all ingress; allow egress only to ``targets`` (the proxy, the control endpoint),
    to DNS when a target was named by host name, and through ``extra_rules`` (egress rules
    as written, e.g. a podSelector for an in-cluster proxy: ipBlocks only reliably match
    addresses outside the cluster)."""
    egress: list[dict[str, Any]] = [
        {"to": [{"ipBlock": {"cidr": t.cidr}}], "ports": [{"protocol": "TCP", "port": t.port}]}
        for t in sorted(set(targets), key=lambda t: (t.cidr, t.port))
    ]
    if allow_dns:
        egress.append({"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]})
    egress += [dict(rule) for rule in extra_rules or []]
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if owner is not None:
        meta["ownerReferences"] = [owner.as_dict()]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
            "spec": {"podSelector": {"matchLabels": dict(pod_selector)}, "policyTypes": ["Ingress", "Egress"],
                     "ingress": [], "egress": egress}}


def selector(labels: dict[str, str]) -> str:
    """``k=v,k2=v2`` label selector."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
