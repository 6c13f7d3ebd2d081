"""The simulated scheduler + kubelet drive real pod status shapes, seen through the real
client: phases, conditions, containerStatuses, events; every injected failure."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch

from testkit.fakes.kubernetes import ExecResult, FakeKubeAPI, Node, SimulatedKubelet

CANCELLED: set[str] = set()


async def _program(pod: dict[str, Any], log: Callable[[str], None]) -> ExecResult:
    """Executor driven by annotations: sleep, exit code, oom; records cancellations."""
    ann = pod["metadata"].get("annotations") or {}
    log(f"started {pod['metadata']['name']}")
    try:
        await asyncio.sleep(float(ann.get("sleep", "0")))
    except asyncio.CancelledError:
        CANCELLED.add(pod["metadata"]["uid"])
        raise
    for line in ann.get("print", "").split(";"):
        if line:
            log(line)
    return ExecResult(int(ann.get("exit", "0")), oom=ann.get("oom") == "1", reason=ann.get("reason"),
                      message=ann.get("message"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeKubeAPI, client.CoreV1Api]]:
    kubelet = SimulatedKubelet(executor=_program, nodes=[Node("small-1", cpu="4", memory="8Gi", pods=20),
                                                         Node("small-2", cpu="4", memory="8Gi", pods=20)],
                               pullable=lambda image: not image.startswith("missing/"), backoff_seconds=0.05,
                               fail_after=0.05, node_lost_grace=0.2)
    with FakeKubeAPI(kubelet=kubelet) as fake:
        api_client = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path_factory.mktemp("k") / "kc")))
        yield fake, client.CoreV1Api(api_client)
        api_client.close()


@pytest.fixture
def ns(cluster: tuple[FakeKubeAPI, client.CoreV1Api]) -> str:
    name = f"k-{uuid.uuid4().hex[:8]}"
    cluster[1].create_namespace({"metadata": {"name": name}})
    return name


def make_pod(name: str, *, image: str = "debian:bookworm", labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None, requests: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if requests:
        container["resources"] = {"requests": requests, "limits": requests}
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"restartPolicy": "Never", "containers": [container], **spec}}


def wait_pod(v1: client.CoreV1Api, ns: str, name: str, pred: Callable[[client.V1Pod], bool],
             timeout: float = 10.0) -> client.V1Pod:
    end = time.monotonic() + timeout
    pod = None
    while time.monotonic() < end:
        pod = v1.read_namespaced_pod(name, ns)
        if pred(pod):
            return pod
        time.sleep(0.02)
    raise AssertionError(f"pod {name} never matched; last status: {pod.status if pod else None}")


def cond(pod: client.V1Pod, type_: str) -> client.V1PodCondition:
    return next(c for c in pod.status.conditions if c.type == type_)


def event_reasons(v1: client.CoreV1Api, ns: str, name: str) -> list[str]:
    evs = v1.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
    return [e.reason for e in sorted(evs, key=lambda e: int(e.metadata.resource_version))]


def terminated(pod: client.V1Pod) -> client.V1ContainerStateTerminated:
    return pod.status.container_statuses[0].state.terminated


def test_success_lifecycle_phases_conditions_events(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    rv = v1.list_namespaced_pod(ns).metadata.resource_version
    v1.create_namespaced_pod(ns, make_pod("ok", annotations={"sleep": "0.3"}))
    phases = []
    for ev in watch.Watch().stream(v1.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=5):
        phases.append(ev["object"].status.phase)
        if ev["object"].status.phase == "Succeeded":
            break
    assert phases[0] == "Pending" and phases[-1] == "Succeeded" and "Running" in phases
    pod = v1.read_namespaced_pod("ok", ns)
    assert pod.spec.node_name in ("small-1", "small-2") and pod.status.pod_ip and pod.status.start_time
    assert cond(pod, "PodScheduled").status == "True"
    assert (cond(pod, "Ready").status, cond(pod, "Ready").reason) == ("False", "PodCompleted")
    t = terminated(pod)
    assert (t.exit_code, t.reason) == (0, "Completed") and t.started_at <= t.finished_at
    assert event_reasons(v1, ns, "ok") == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    assert v1.read_namespaced_pod_log("ok", ns) == "started ok\n"


def test_running_state_while_program_runs(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("busy", annotations={"sleep": "1"}))
    pod = wait_pod(v1, ns, "busy", lambda p: p.status.phase == "Running")
    cs = pod.status.container_statuses[0]
    assert cs.ready and cs.state.running.started_at and cs.container_id.startswith("containerd://")
    assert cond(pod, "Ready").status == "True"


def test_exit_code_and_oomkilled(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("err", annotations={"exit": "3"}))
    v1.create_namespaced_pod(ns, make_pod("oom", annotations={"oom": "1"}))
    err = wait_pod(v1, ns, "err", lambda p: p.status.phase == "Failed")
    assert (terminated(err).exit_code, terminated(err).reason) == (3, "Error")
    oom = wait_pod(v1, ns, "oom", lambda p: p.status.phase == "Failed")
    assert (terminated(oom).exit_code, terminated(oom).reason) == (137, "OOMKilled")


def test_active_deadline_seconds(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    t0 = time.monotonic()
    v1.create_namespaced_pod(ns, make_pod("slow", annotations={"sleep": "30"}, activeDeadlineSeconds=1))
    pod = wait_pod(v1, ns, "slow", lambda p: p.status.phase == "Failed")
    assert 0.9 < time.monotonic() - t0 < 5
    assert (pod.status.reason, pod.status.message) == (
        "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
    assert terminated(pod).exit_code == 137
    assert {"DeadlineExceeded", "Killing"} <= set(event_reasons(v1, ns, "slow"))


def test_unschedulable_by_resources_then_scheduled_when_capacity_frees(
        cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("huge", requests={"cpu": "64", "memory": "1Gi"}))
    pod = wait_pod(v1, ns, "huge", lambda p: bool(p.status.conditions))
    c = cond(pod, "PodScheduled")
    assert (pod.status.phase, c.status, c.reason) == ("Pending", "False", "Unschedulable")
    assert c.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert "FailedScheduling" in event_reasons(v1, ns, "huge")
    # Two 3-CPU pods fill the nodes; a third waits until one finishes.
    for name in ("fill-1", "fill-2"):
        v1.create_namespaced_pod(ns, make_pod(name, annotations={"sleep": "0.5"}, requests={"cpu": "3"}))
    v1.create_namespaced_pod(ns, make_pod("waits", requests={"cpu": "3"}))
    pod = wait_pod(v1, ns, "waits", lambda p: bool(p.status.conditions))
    assert cond(pod, "PodScheduled").reason == "Unschedulable"
    pod = wait_pod(v1, ns, "waits", lambda p: p.status.phase == "Succeeded")
    assert cond(pod, "PodScheduled").status == "True"
    v1.delete_namespaced_pod("huge", ns)
    wait_pod(v1, ns, "fill-1", lambda p: p.status.phase == "Succeeded")


def test_image_pull_failure_and_backoff(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("nopull", image="missing/image:1"))
    pod = wait_pod(v1, ns, "nopull", lambda p: bool(p.status.container_statuses) and
                   p.status.container_statuses[0].state.waiting is not None and
                   p.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff")
    assert pod.status.phase == "Pending"
    assert 'Back-off pulling image "missing/image:1"' in pod.status.container_statuses[0].state.waiting.message
    reasons = event_reasons(v1, ns, "nopull")
    assert {"Pulling", "Failed", "BackOff"} <= set(reasons)
    msgs = [e.message for e in v1.list_namespaced_event(ns, field_selector="involvedObject.name=nopull").items]
    assert "Error: ErrImagePull" in msgs and "Error: ImagePullBackOff" in msgs
    with pytest.raises(client.ApiException) as err:
        v1.read_namespaced_pod_log("nopull", ns)
    assert err.value.status == 400 and "waiting to start" in err.value.body
    v1.delete_namespaced_pod("nopull", ns)  # a bound, pending pod is killed by its kubelet
    deadline = time.monotonic() + 5
    while v1.list_namespaced_pod(ns).items and time.monotonic() < deadline:
        time.sleep(0.02)
    assert v1.list_namespaced_pod(ns).items == []


def test_missing_secret_is_create_container_config_error(cluster: tuple[FakeKubeAPI, client.CoreV1Api],
                                                          ns: str) -> None:
    _, v1 = cluster
    pod = make_pod("needs-secret")
    pod["spec"]["containers"][0]["env"] = [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "rollout-token", "key": "token"}}}]
    v1.create_namespaced_pod(ns, pod)
    got = wait_pod(v1, ns, "needs-secret", lambda p: bool(p.status.container_statuses) and
                   p.status.container_statuses[0].state.waiting is not None and
                   p.status.container_statuses[0].state.waiting.reason == "CreateContainerConfigError")
    assert got.status.container_statuses[0].state.waiting.message == 'secret "rollout-token" not found'
    v1.create_namespaced_secret(ns, {"metadata": {"name": "rollout-token"}, "stringData": {"token": "t"}})
    wait_pod(v1, ns, "needs-secret", lambda p: p.status.phase == "Succeeded")


# ---- injected failures ----------------------------------------------------------------------


def test_inject_oom(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-oom", "oom")
    v1.create_namespaced_pod(ns, make_pod("o", labels={"case": f"{ns}-oom"}, annotations={"sleep": "5"}))
    pod = wait_pod(v1, ns, "o", lambda p: p.status.phase == "Failed")
    t = terminated(pod)
    assert (t.exit_code, t.reason) == (137, "OOMKilled") and t.started_at is not None
    assert pod.status.reason is None


def test_inject_deadline(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-dl", "deadline")
    v1.create_namespaced_pod(ns, make_pod("d", labels={"case": f"{ns}-dl"}, annotations={"sleep": "5"},
                                          activeDeadlineSeconds=600))
    pod = wait_pod(v1, ns, "d", lambda p: p.status.phase == "Failed")
    assert pod.status.reason == "DeadlineExceeded" and terminated(pod).exit_code == 137


def test_inject_image_pull(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-ip", "image_pull")
    v1.create_namespaced_pod(ns, make_pod("i", labels={"case": f"{ns}-ip"}))
    pod = wait_pod(v1, ns, "i", lambda p: bool(p.status.container_statuses) and
                   p.status.container_statuses[0].state.waiting is not None and
                   p.status.container_statuses[0].state.waiting.reason in ("ErrImagePull", "ImagePullBackOff"))
    assert pod.status.phase == "Pending"
    time.sleep(0.3)
    assert v1.read_namespaced_pod("i", ns).status.phase == "Pending"  # never starts


def test_inject_evicted(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-ev", "evicted")
    v1.create_namespaced_pod(ns, make_pod("e", labels={"case": f"{ns}-ev"}, annotations={"sleep": "5"}))
    pod = wait_pod(v1, ns, "e", lambda p: p.status.phase == "Failed")
    assert pod.status.reason == "Evicted" and pod.status.message.startswith("The node was low on resource: memory.")
    assert cond(pod, "DisruptionTarget").reason == "TerminationByKubelet"
    assert "Evicted" in event_reasons(v1, ns, "e")


def test_inject_unschedulable(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-us", "unschedulable")
    v1.create_namespaced_pod(ns, make_pod("u", labels={"case": f"{ns}-us"}))
    pod = wait_pod(v1, ns, "u", lambda p: bool(p.status.conditions))
    c = cond(pod, "PodScheduled")
    assert (pod.status.phase, c.status, c.reason) == ("Pending", "False", "Unschedulable")
    assert pod.spec.node_name is None and "FailedScheduling" in event_reasons(v1, ns, "u")


def test_inject_node_lost(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    fake.inject(f"case={ns}-nl", "node_lost")
    rv = v1.list_namespaced_pod(ns).metadata.resource_version
    v1.create_namespaced_pod(ns, make_pod("n", labels={"case": f"{ns}-nl"}, annotations={"sleep": "5"}))
    seen = []
    for ev in watch.Watch().stream(v1.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=5):
        st = ev["object"].status
        seen.append((ev["type"], st.phase, st.reason))
        if ev["type"] == "DELETED":
            break
    assert ("MODIFIED", "Unknown", "NodeLost") in seen
    assert seen[-1] == ("DELETED", "Failed", "NodeLost")


def test_inject_count_and_existing_pods(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    fake, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("already", labels={"case": f"{ns}-ex"}, annotations={"sleep": "5"}))
    wait_pod(v1, ns, "already", lambda p: p.status.phase == "Running")
    fake.inject(f"case={ns}-ex", "oom", count=1)  # hits the running pod only
    pod = wait_pod(v1, ns, "already", lambda p: p.status.phase == "Failed")
    assert terminated(pod).reason == "OOMKilled"
    v1.create_namespaced_pod(ns, make_pod("later", labels={"case": f"{ns}-ex"}))
    assert wait_pod(v1, ns, "later", lambda p: p.status.phase in ("Succeeded", "Failed")).status.phase == "Succeeded"
    with pytest.raises(ValueError, match="unknown failure"):
        fake.inject("a=b", "meteor")


def test_lose_whole_node(tmp_path) -> None:
    kubelet = SimulatedKubelet(executor=_program, nodes=[Node("only", cpu="8", memory="8Gi")], node_lost_grace=0.1)
    with FakeKubeAPI(kubelet=kubelet) as fake:
        api_client = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path / "kc")))
        v1 = client.CoreV1Api(api_client)
        for i in range(3):
            v1.create_namespaced_pod("default", make_pod(f"p{i}", annotations={"sleep": "10"}))
        for i in range(3):
            wait_pod(v1, "default", f"p{i}", lambda p: p.status.phase == "Running")
        fake.lose_node("only")
        node = v1.read_node("only")
        assert node.status.conditions[0].status == "Unknown"
        end = time.monotonic() + 5
        while v1.list_namespaced_pod("default").items and time.monotonic() < end:
            time.sleep(0.02)
        assert v1.list_namespaced_pod("default").items == []
        # New pods cannot land on a lost node.
        v1.create_namespaced_pod("default", make_pod("after"))
        pod = wait_pod(v1, "default", "after", lambda p: bool(p.status.conditions))
        assert cond(pod, "PodScheduled").reason == "Unschedulable"
        api_client.close()


def test_init_containers_status_validation_and_requests(cluster: tuple[FakeKubeAPI, client.CoreV1Api],
                                                        ns: str) -> None:
    _, v1 = cluster
    pod = make_pod("with-init", annotations={"sleep": "0.5"})
    pod["spec"]["initContainers"] = [{"name": "runtime", "image": "runtime:1", "command": ["true"]}]
    v1.create_namespaced_pod(ns, pod)
    running = wait_pod(v1, ns, "with-init", lambda p: p.status.phase == "Running")
    init = running.status.init_container_statuses[0]
    assert (init.name, init.state.terminated.reason, init.state.terminated.exit_code) == ("runtime", "Completed", 0)
    assert cond(running, "Initialized").status == "True"
    assert v1.read_namespaced_pod_log("with-init", ns, container="runtime") == ""
    bad = make_pod("bad-init")
    bad["spec"]["initContainers"] = [{"name": "main", "image": ""}]
    with pytest.raises(client.ApiException) as err:
        v1.create_namespaced_pod(ns, bad)
    fields = {c["field"] for c in __import__("json").loads(err.value.body)["details"]["causes"]}
    assert fields == {"spec.initContainers[0].image", "spec.containers[0].name"}  # and the duplicate name
    # An init container's requests count when larger than the containers' sum.
    big = make_pod("big-init")
    big["spec"]["initContainers"] = [{"name": "prep", "image": "x:1", "resources": {"requests": {"cpu": "6"}}}]
    v1.create_namespaced_pod(ns, big)
    got = wait_pod(v1, ns, "big-init", lambda p: bool(p.status.conditions))
    assert cond(got, "PodScheduled").reason == "Unschedulable"
    v1.delete_namespaced_pod("big-init", ns)


def test_force_delete_cancels_the_executor(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("forced", annotations={"sleep": "30"}))
    uid = wait_pod(v1, ns, "forced", lambda p: p.status.phase == "Running").metadata.uid
    v1.delete_namespaced_pod("forced", ns, grace_period_seconds=0)
    assert v1.list_namespaced_pod(ns).items == []  # gone at once, no kubelet confirmation
    end = time.monotonic() + 5
    while uid not in CANCELLED and time.monotonic() < end:
        time.sleep(0.02)
    assert uid in CANCELLED


def test_invalid_image_name_and_never_pull(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster

    def waiting_reason(p: client.V1Pod) -> str | None:
        statuses = p.status.container_statuses or []
        return statuses[0].state.waiting.reason if statuses and statuses[0].state.waiting else None

    v1.create_namespaced_pod(ns, make_pod("badname", image="Registry/Bad Name:1"))
    pod = wait_pod(v1, ns, "badname", lambda p: waiting_reason(p) == "InvalidImageName")
    assert "invalid reference format" in pod.status.container_statuses[0].state.waiting.message
    never = make_pod("never", image="missing/thing:1")
    never["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    v1.create_namespaced_pod(ns, never)
    pod = wait_pod(v1, ns, "never", lambda p: waiting_reason(p) == "ErrImageNeverPull")
    assert pod.status.phase == "Pending"
    present = make_pod("present", image="debian:bookworm")
    present["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    v1.create_namespaced_pod(ns, present)
    wait_pod(v1, ns, "present", lambda p: p.status.phase == "Succeeded")
    assert "Pulling" not in event_reasons(v1, ns, "present")


def test_exec_result_reason_and_termination_message(cluster: tuple[FakeKubeAPI, client.CoreV1Api], ns: str) -> None:
    _, v1 = cluster
    v1.create_namespaced_pod(ns, make_pod("nostart", annotations={
        "exit": "128", "reason": "StartError", "message": 'exec: "nope": executable file not found in $PATH'}))
    t = terminated(wait_pod(v1, ns, "nostart", lambda p: p.status.phase == "Failed"))
    assert (t.exit_code, t.reason, t.message) == (128, "StartError", 'exec: "nope": executable file not found in $PATH')
    fallback = make_pod("fallback", annotations={"exit": "2", "print": "step 1;boom: it broke"})
    fallback["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError"
    v1.create_namespaced_pod(ns, fallback)
    t = terminated(wait_pod(v1, ns, "fallback", lambda p: p.status.phase == "Failed"))
    assert t.message == "started fallback\nstep 1\nboom: it broke\n"
    v1.create_namespaced_pod(ns, make_pod("plain-fail", annotations={"exit": "2", "print": "x"}))
    assert terminated(wait_pod(v1, ns, "plain-fail", lambda p: p.status.phase == "Failed")).message is None
