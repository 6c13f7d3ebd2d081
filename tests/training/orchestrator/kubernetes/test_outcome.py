"""Pod status → verdict, on status objects shaped as a real API server writes them
(kubectl get pod -o json of each situation; the Kubernetes docs' pod lifecycle page)."""

from __future__ import annotations

from typing import Any

from environments.records import ErrorKind
from training.orchestrator.kubernetes.outcome import PodTracker, Thresholds


def pod(phase: str, *, reason: str | None = None, message: str | None = None, containers: list | None = None,
        inits: list | None = None, conditions: list | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if containers is not None:
        status["containerStatuses"] = containers
    if inits is not None:
        status["initContainerStatuses"] = inits
    if conditions is not None:
        status["conditions"] = conditions
    return {"metadata": {"name": "openforge-r-1"}, "status": status}


def terminated(code: int, reason: str, name: str = "sandbox") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}, "ready": False}


def waiting(reason: str, name: str = "sandbox", message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}, "ready": False}


def tracker(**kw: float) -> PodTracker:
    return PodTracker(created_at=0.0, thresholds=Thresholds(**{"pending_timeout": 300, "unschedulable_grace": 60,
                                                               "image_pull_grace": 30, **kw}))


def test_clean_exit_and_error_exit() -> None:
    v = tracker().observe(pod("Succeeded", containers=[terminated(0, "Completed")]), 5)
    assert v.terminal and v.exit_code == 0 and v.error_kind is None and not v.oom
    v = tracker().observe(pod("Failed", containers=[terminated(3, "Error")]), 5)
    assert v.terminal and v.exit_code == 3 and v.error_kind is None


def test_oom_killed() -> None:
    v = tracker().observe(pod("Failed", containers=[terminated(137, "OOMKilled")]), 5)
    assert v.terminal and v.oom and v.error_kind == ErrorKind.oom and v.exit_code == 137


def test_deadline_exceeded_is_a_timeout() -> None:
    p = pod("Failed", reason="DeadlineExceeded", message="Pod was active on the node longer than the specified deadline",
            containers=[terminated(137, "Error")])
    v = tracker().observe(p, 5)
    assert v.terminal and v.timeout and v.error_kind == ErrorKind.deadline_exceeded


def test_evicted() -> None:
    p = pod("Failed", reason="Evicted", message="The node was low on resource: memory.",
            containers=[terminated(137, "Error")],
            conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}])
    v = tracker().observe(p, 5)
    assert v.terminal and v.error_kind == ErrorKind.evicted and "low on resource" in v.message


def test_node_lost() -> None:
    v = tracker().observe(pod("Unknown", reason="NodeLost", message="Node n1 which was running pod x is unresponsive"), 5)
    assert v.terminal and v.error_kind == ErrorKind.node_lost and "node lost" in v.message
    gc = pod("Failed", conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC"}])
    assert tracker().observe(gc, 5).error_kind == ErrorKind.node_lost
    unknown = pod("Unknown", containers=[{"name": "sandbox", "state": {"running": {}}}])
    assert tracker().observe(unknown, 5).error_kind == ErrorKind.node_lost
    # a kubelet eviction is not a lost node
    kubelet = pod("Failed", conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}],
                  containers=[terminated(137, "Error")])
    assert tracker().observe(kubelet, 5).error_kind is None


def test_image_pull_gets_a_grace_period_but_invalid_names_do_not() -> None:
    t = tracker(image_pull_grace=30)
    p = pod("Pending", containers=[waiting("ErrImagePull", message="not found")])
    assert not t.observe(p, 10).terminal  # first seen at 10
    assert not t.observe(pod("Pending", containers=[waiting("ImagePullBackOff")]), 35).terminal
    v = t.observe(pod("Pending", containers=[waiting("ImagePullBackOff")]), 41)
    assert v.terminal and v.error_kind == ErrorKind.image_pull
    v = tracker().observe(pod("Pending", containers=[waiting("InvalidImageName")]), 1)
    assert v.terminal and v.error_kind == ErrorKind.image_pull
    # an init container (the runtime image) failing to pull counts the same
    v = tracker(image_pull_grace=0).observe(pod("Pending", inits=[waiting("ErrImagePull", name="runtime")]), 1)
    assert v.terminal and v.error_kind == ErrorKind.image_pull and "runtime" in v.message


def test_unschedulable_after_grace() -> None:
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/4 nodes are available: 4 Insufficient cpu."}]
    t = tracker(unschedulable_grace=60)
    assert not t.observe(pod("Pending", conditions=cond), 1).terminal
    v = t.observe(pod("Pending", conditions=cond), 62)
    assert v.terminal and v.error_kind == ErrorKind.unschedulable and "Insufficient cpu" in v.message


def test_pending_too_long() -> None:
    t = tracker(pending_timeout=100)
    scheduled = [{"type": "PodScheduled", "status": "True"}]
    assert not t.observe(pod("Pending", conditions=scheduled, containers=[waiting("ContainerCreating")]), 50).terminal
    v = t.observe(pod("Pending", conditions=scheduled, containers=[waiting("ContainerCreating")]), 101)
    assert v.terminal and v.error_kind == ErrorKind.start_failed
    v = tracker(pending_timeout=100).observe(pod("Pending"), 101)
    assert v.terminal and v.error_kind == ErrorKind.unschedulable


def test_running_and_config_errors() -> None:
    v = tracker().observe(pod("Running", containers=[{"name": "sandbox", "state": {"running": {}}}]), 1)
    assert v.running and not v.terminal
    t = tracker(image_pull_grace=5)
    p = pod("Pending", containers=[waiting("CreateContainerConfigError", message='secret "x" not found')])
    assert not t.observe(p, 0).terminal
    v = t.observe(p, 6)
    assert v.terminal and v.error_kind == ErrorKind.start_failed and 'secret "x"' in v.message


def test_failed_init_container_and_admission_refusal() -> None:
    v = tracker().observe(pod("Failed", inits=[terminated(1, "Error", name="workdir")],
                              containers=[waiting("PodInitializing")]), 3)
    assert v.terminal and v.error_kind == ErrorKind.start_failed and "workdir" in v.message
    v = tracker().observe(pod("Failed", reason="OutOfcpu", message="Pod Node didn't have enough resource: cpu"), 3)
    assert v.terminal and v.error_kind == ErrorKind.start_failed and "OutOfcpu" in v.message
