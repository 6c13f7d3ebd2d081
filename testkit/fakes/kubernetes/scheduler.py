"""Nodes and the scheduler's fit check: resource requests against node capacity,
``nodeSelector``, readiness; with kube-scheduler's FailedScheduling message format."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from testkit.fakes.kubernetes.quantity import parse_quantity


@dataclass
class Node:
    """A simulated node; ``cpu`` in cores, ``memory`` a quantity, ``pods`` the pod slots."""

    name: str
    cpu: str | float = "64"
    memory: str = "256Gi"
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    ready: bool = True
    used_cpu: float = 0.0
    used_memory: int = 0
    used_pods: int = 0

    @cached_property
    def cpu_cores(self) -> float:
        return float(parse_quantity(self.cpu))

    @cached_property
    def memory_bytes(self) -> int:
        return int(parse_quantity(self.memory))

    def all_labels(self) -> dict[str, str]:
        return {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                **self.labels}

    def manifest(self) -> dict[str, Any]:
        cap = {"cpu": str(self.cpu), "memory": str(self.memory), "pods": str(self.pods)}
        return {"metadata": {"name": self.name, "labels": self.all_labels()},
                "spec": {},
                "status": {"capacity": cap, "allocatable": dict(cap),
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "kubelet is posting ready status"}],
                           "nodeInfo": {"kubeletVersion": "v1.31.0-openforge-fake", "containerRuntimeVersion":
                                        "containerd://1.7.0", "operatingSystem": "linux", "architecture": "amd64",
                                        "osImage": "fake", "kernelVersion": "6.1.0", "machineID": "", "systemUUID":
                                        "", "bootID": "", "kubeProxyVersion": ""}}}


def default_nodes() -> list[Node]:
    """Four large nodes (1,000 pod slots in all): enough for 500 concurrent 2-CPU/2-GiB pods."""
    return [Node(f"fake-node-{i}", cpu="256", memory="1Ti", pods=250) for i in range(1, 5)]


def _container_requests(c: dict[str, Any]) -> tuple[float, int]:
    req = (c.get("resources") or {}).get("requests") or {}
    return (float(parse_quantity(req["cpu"])) if "cpu" in req else 0.0,
            int(parse_quantity(req["memory"])) if "memory" in req else 0)


def pod_requests(pod: dict[str, Any]) -> tuple[float, int]:
    """Effective requests: max(sum over containers, largest init container), as the scheduler
    computes them (init containers run one at a time before the others)."""
    cpu, mem = 0.0, 0
    for c in pod["spec"].get("containers") or []:
        c_cpu, c_mem = _container_requests(c)
        cpu, mem = cpu + c_cpu, mem + c_mem
    for c in pod["spec"].get("initContainers") or []:
        c_cpu, c_mem = _container_requests(c)
        cpu, mem = max(cpu, c_cpu), max(mem, c_mem)
    return cpu, mem


def _reasons(node: Node, pod: dict[str, Any], cpu: float, mem: int, *, total: bool) -> list[str]:
    if not node.ready:
        return ["node(s) had untolerated taint {node.kubernetes.io/unreachable: }"]
    selector = pod["spec"].get("nodeSelector") or {}
    labels = node.all_labels()
    if any(labels.get(k) != v for k, v in selector.items()):
        return ["node(s) didn't match Pod's node affinity/selector"]
    used = (0.0, 0, 0) if total else (node.used_cpu, node.used_memory, node.used_pods)
    out = []
    if used[2] + 1 > node.pods:
        out.append("Too many pods")
    if used[0] + cpu > node.cpu_cores + 1e-9:
        out.append("Insufficient cpu")
    if used[1] + mem > node.memory_bytes:
        out.append("Insufficient memory")
    return out


def find_node(nodes: list[Node], pod: dict[str, Any], cpu: float, mem: int) -> tuple[Node | None, str, bool]:
    """(node, "", _) when one fits now; else (None, FailedScheduling message, fits_ever)."""
    counts: Counter[str] = Counter()
    fits_ever = False
    for node in nodes:
        reasons = _reasons(node, pod, cpu, mem, total=False)
        if not reasons:
            return node, "", True
        counts.update(reasons)
        if node.ready and not _reasons(node, pod, cpu, mem, total=True):
            fits_ever = True
    n = len(nodes)
    detail = ", ".join(f"{k} {r}" for r, k in sorted(counts.items()))
    msg = (f"0/{n} nodes are available: {detail}. preemption: 0/{n} nodes are available: "
           f"{n} No preemption victims found for incoming pod.")
    return None, msg, fits_ever
