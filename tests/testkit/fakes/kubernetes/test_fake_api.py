"""The fake Kubernetes API server speaks the real protocol: the official ``kubernetes``
client (and ``kubernetes_asyncio``) create, list, watch, patch, delete and read logs over
HTTP via a kubeconfig, and get the API server's Status errors."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from testkit.fakes.kubernetes import ExecResult, FakeKubeAPI, SimulatedKubelet


async def _chatty(pod: dict[str, Any], log: Callable[[str], None]) -> ExecResult:
    """Executor: prints the pod's args (one per line) with a short pause between them."""
    args = pod["spec"]["containers"][0].get("args") or []
    for i, arg in enumerate(args):
        log(arg)
        if i + 1 < len(args):
            await asyncio.sleep(0.05)
    code = int(pod["metadata"].get("annotations", {}).get("exit-code", "0"))
    return ExecResult(code)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeKubeAPI, client.ApiClient]]:
    with FakeKubeAPI(kubelet=SimulatedKubelet(executor=_chatty)) as fake:
        kubeconfig = fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")
        api_client = config.new_client_from_config(str(kubeconfig))
        yield fake, api_client
        api_client.close()


@pytest.fixture
def v1(api: tuple[FakeKubeAPI, client.ApiClient]) -> client.CoreV1Api:
    return client.CoreV1Api(api[1])


@pytest.fixture
def ns(v1: client.CoreV1Api) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def pod_body(name: str, *, labels: dict[str, str] | None = None, args: list[str] | None = None,
             **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36",
                                                                "args": args or []}], **spec}}


def wait_for(fn: Callable[[], Any], timeout: float = 10.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout}s")


def status_of(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


def test_discovery_and_version(api: tuple[FakeKubeAPI, client.ApiClient]) -> None:
    fake, api_client = api
    assert client.VersionApi(api_client).get_code().major == "1"
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"networking.k8s.io", "rbac.authorization.k8s.io"} <= groups
    core = client.CoreV1Api(api_client).get_api_resources()
    names = {r.name for r in core.resources}
    assert {"pods", "pods/log", "pods/status", "namespaces", "secrets", "configmaps", "events"} <= names
    assert fake.url.startswith("http://127.0.0.1:")


def test_create_get_list_with_selectors(v1: client.CoreV1Api, ns: str) -> None:
    created = v1.create_namespaced_pod(ns, pod_body("a", labels={"run": "r1", "role": "x"}))
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.namespace == ns
    assert created.status.phase == "Pending" and created.spec.service_account_name == "default"
    v1.create_namespaced_pod(ns, pod_body("b", labels={"run": "r1", "role": "y"}))
    v1.create_namespaced_pod(ns, pod_body("c", labels={"run": "r2"}))
    names = lambda **kw: sorted(p.metadata.name for p in v1.list_namespaced_pod(ns, **kw).items)
    assert names() == ["a", "b", "c"]
    assert names(label_selector="run=r1") == ["a", "b"]
    assert names(label_selector="run=r1,role!=x") == ["b"]
    assert names(label_selector="role in (x,z)") == ["a"]
    assert names(label_selector="!role") == ["c"]
    assert names(field_selector="metadata.name=c") == ["c"]
    wait_for(lambda: names(field_selector="status.phase=Succeeded") == ["a", "b", "c"])
    page = v1.list_namespaced_pod(ns, limit=2)
    assert len(page.items) == 2 and page.metadata._continue
    rest = v1.list_namespaced_pod(ns, limit=2, _continue=page.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["c"] and not rest.metadata._continue
    everywhere = {(p.metadata.namespace, p.metadata.name) for p in v1.list_pod_for_all_namespaces().items}
    assert (ns, "a") in everywhere
    with pytest.raises(ApiException) as err:
        v1.list_namespaced_pod(ns, field_selector="spec.unknownField=1")
    assert err.value.status == 400


def test_error_statuses(v1: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_pod("missing", ns)
    body = status_of(err.value)
    assert (err.value.status, body["kind"], body["reason"], body["details"]["name"]) == (
        404, "Status", "NotFound", "missing")
    assert body["message"] == 'pods "missing" not found'
    v1.create_namespaced_pod(ns, pod_body("dup"))
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod(ns, pod_body("dup"))
    assert err.value.status == 409 and status_of(err.value)["reason"] == "AlreadyExists"
    bad = pod_body("nocontainers")
    bad["spec"]["containers"] = []
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod(ns, bad)
    body = status_of(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"] == [{"reason": "FieldValueRequired", "message": "Required value",
                                          "field": "spec.containers"}]
    assert body["message"] == 'Pod "nocontainers" is invalid: spec.containers: Required value'
    bad = pod_body("Bad_Name")
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod(ns, bad)
    fields = {c["field"] for c in status_of(err.value)["details"]["causes"]}
    assert fields == {"metadata.name", "spec.containers[0].resources.requests"}
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod("no-such-ns", pod_body("x"))
    assert err.value.status == 404 and status_of(err.value)["message"] == 'namespaces "no-such-ns" not found'
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_pod(ns, pod_body("sa", service_account_name="missing-sa"))
    assert err.value.status == 403 and "serviceaccount \"missing-sa\" not found" in status_of(err.value)["message"]
    # Pod specs are immutable apart from a few fields.
    with pytest.raises(ApiException) as err:
        v1.patch_namespaced_pod("dup", ns, {"spec": {"restartPolicy": "Always"}})
    assert err.value.status == 422 and "pod updates may not change fields" in status_of(err.value)["message"]
    # Optimistic concurrency on replace.
    cm = v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"),
                                                                 data={"k": "1"}))
    cm.data = {"k": "2"}
    v1.replace_namespaced_config_map("cm", ns, cm)
    cm.data = {"k": "3"}
    with pytest.raises(ApiException) as err:
        v1.replace_namespaced_config_map("cm", ns, cm)  # stale resourceVersion
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"


def test_secrets_configmaps_patch_and_generate_name(v1: client.CoreV1Api, ns: str) -> None:
    secret = v1.create_namespaced_secret(ns, client.V1Secret(
        metadata=client.V1ObjectMeta(generate_name="tok-"), string_data={"token": "s3cret"}))
    assert secret.metadata.name.startswith("tok-") and len(secret.metadata.name) == 9
    assert secret.type == "Opaque" and base64.b64decode(secret.data["token"]) == b"s3cret"
    assert secret.string_data is None
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_secret(ns, {"metadata": {"name": "bad"}, "data": {"k": "not base64!"}})
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_config_map(ns, {"metadata": {"name": "bad"}, "data": {"no/slash": "x"}})
    assert err.value.status == 422 and status_of(err.value)["details"]["causes"][0]["field"] == "data[no/slash]"
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "cfg", "labels": {"a": "1"}}, "data": {"x": "1"}})
    merged = v1.patch_namespaced_config_map("cfg", ns, {"metadata": {"labels": {"b": "2"}}, "data": {"y": "2"}})
    assert merged.metadata.labels == {"a": "1", "b": "2"} and merged.data == {"x": "1", "y": "2"}
    patched = v1.patch_namespaced_config_map("cfg", ns, [{"op": "remove", "path": "/data/x"}])
    assert patched.data == {"y": "2"}
    assert int(patched.metadata.resource_version) > int(merged.metadata.resource_version)


def test_network_policy_and_rbac(api: tuple[FakeKubeAPI, client.ApiClient], ns: str) -> None:
    net = client.NetworkingV1Api(api[1])
    policy = {"metadata": {"name": "rollouts"}, "spec": {
        "podSelector": {"matchLabels": {"openforge.dev/role": "rollout"}},
        "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.5/32"}}], "ports": [{"port": 9000, "protocol": "TCP"}]}]}}
    created = net.create_namespaced_network_policy(ns, policy)
    assert created.spec.policy_types == ["Ingress", "Egress"]
    assert [p.metadata.name for p in net.list_namespaced_network_policy(ns).items] == ["rollouts"]
    rbac = client.RbacAuthorizationV1Api(api[1])
    rbac.create_namespaced_role(ns, {"metadata": {"name": "r"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    assert rbac.read_namespaced_role("r", ns).rules[0].resources == ["pods"]
    net.delete_namespaced_network_policy("rollouts", ns)
    assert net.list_namespaced_network_policy(ns).items == []


def test_watch_added_modified_deleted_and_resume(v1: client.CoreV1Api, ns: str) -> None:
    rv = v1.list_namespaced_pod(ns).metadata.resource_version
    seen: list[tuple[str, str, str]] = []

    def watch_events() -> None:
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_pod, ns, resource_version=rv, label_selector="w=1",
                           timeout_seconds=5):
            obj = ev["object"]
            seen.append((ev["type"], obj.metadata.name, obj.status.phase))
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=watch_events)
    t.start()
    time.sleep(0.2)
    v1.create_namespaced_pod(ns, pod_body("watched", labels={"w": "1"}))
    v1.create_namespaced_pod(ns, pod_body("ignored", labels={"w": "2"}))
    wait_for(lambda: v1.read_namespaced_pod("watched", ns).status.phase == "Succeeded")
    v1.delete_namespaced_pod("watched", ns)
    t.join(timeout=10)
    assert seen[0] == ("ADDED", "watched", "Pending")
    assert ("MODIFIED", "watched", "Running") in seen and ("MODIFIED", "watched", "Succeeded") in seen
    assert seen[-1][:2] == ("DELETED", "watched")
    assert all(name == "watched" for _t, name, _p in seen)
    # Resuming from the old resourceVersion replays exactly the same events.
    replay = []
    for ev in watch.Watch().stream(v1.list_namespaced_pod, ns, resource_version=rv, label_selector="w=1",
                                   timeout_seconds=1):
        replay.append((ev["type"], ev["object"].metadata.name, ev["object"].status.phase))
    assert replay == seen


def test_watch_label_change_is_added_then_deleted(v1: client.CoreV1Api, ns: str) -> None:
    v1.create_namespace  # noqa: B018 - keep the fixture order obvious
    cm = v1.create_namespaced_config_map(ns, {"metadata": {"name": "m", "labels": {"sel": "no"}}})
    rv = cm.metadata.resource_version
    v1.patch_namespaced_config_map("m", ns, {"metadata": {"labels": {"sel": "yes"}}})
    v1.patch_namespaced_config_map("m", ns, {"metadata": {"labels": {"sel": "no"}}})
    events = [ev["type"] for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns, label_selector="sel=yes",
                                                        resource_version=rv, timeout_seconds=1)]
    assert events == ["ADDED", "DELETED"]


def test_watch_too_old_resource_version_is_410(tmp_path: Path) -> None:
    with FakeKubeAPI(history=5) as fake:
        api_client = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path / "kc")))
        v1 = client.CoreV1Api(api_client)
        for i in range(20):
            v1.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version="3",
                                          timeout_seconds=1):
                pass
        assert err.value.status == 410 and "too old resource version" in err.value.reason
        # The raw stream: HTTP 200 with one ERROR event carrying the Status (as the watch cache does).
        resp = v1.list_namespaced_config_map("default", watch=True, resource_version="3", _preload_content=False)
        line = json.loads(resp.data.decode().splitlines()[0])
        assert resp.status == 200 and line["type"] == "ERROR"
        assert (line["object"]["code"], line["object"]["reason"]) == (410, "Expired")
        api_client.close()


def test_watch_timeout_seconds_ends_stream(v1: client.CoreV1Api, ns: str) -> None:
    t0 = time.monotonic()
    events = list(watch.Watch().stream(v1.list_namespaced_pod, ns, timeout_seconds=1))
    assert events == [] and 0.9 < time.monotonic() - t0 < 5


def test_delete_collection_by_label_and_grace(v1: client.CoreV1Api, ns: str,
                                              api: tuple[FakeKubeAPI, client.ApiClient]) -> None:
    for i in range(3):
        v1.create_namespaced_pod(ns, pod_body(f"run-{i}", labels={"run": "gc"}))
    v1.create_namespaced_pod(ns, pod_body("keep", labels={"run": "other"}))
    v1.delete_collection_namespaced_pod(ns, label_selector="run=gc")
    wait_for(lambda: [p.metadata.name for p in v1.list_namespaced_pod(ns).items] == ["keep"])
    assert all(p["metadata"]["name"] == "keep" for p in api[0].pods(ns))


def test_owner_references_garbage_collection(v1: client.CoreV1Api, ns: str) -> None:
    owner = v1.create_namespaced_config_map(ns, {"metadata": {"name": "run-owner"}})
    ref = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "run-owner", "uid": owner.metadata.uid}]
    v1.create_namespaced_pod(ns, {**pod_body("dep-pod", args=["x"]),
                                  "metadata": {"name": "dep-pod", "ownerReferences": ref}})
    v1.create_namespaced_secret(ns, {"metadata": {"name": "dep-secret", "ownerReferences": ref},
                                     "stringData": {"t": "1"}})
    v1.create_namespaced_secret(ns, {"metadata": {"name": "orphan-me", "ownerReferences": ref}})
    # Orphan propagation keeps dependents (and strips the reference) when asked on another owner.
    owner2 = v1.create_namespaced_config_map(ns, {"metadata": {"name": "owner2"}})
    v1.create_namespaced_secret(ns, {"metadata": {"name": "kept", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner2.metadata.uid}]}})
    v1.delete_namespaced_config_map("owner2", ns, propagation_policy="Orphan")
    kept = v1.read_namespaced_secret("kept", ns)
    assert not kept.metadata.owner_references
    v1.delete_namespaced_config_map("run-owner", ns)
    wait_for(lambda: not v1.list_namespaced_pod(ns).items)
    assert [s.metadata.name for s in v1.list_namespaced_secret(ns).items] == ["kept"]
    # A dependent created with an owner that does not exist is collected too.
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "dangling", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": str(uuid.uuid4())}]}})
    wait_for(lambda: "dangling" not in {c.metadata.name for c in v1.list_namespaced_config_map(ns).items})


def test_foreground_deletion_waits_for_dependents(v1: client.CoreV1Api, ns: str) -> None:
    owner = v1.create_namespaced_config_map(ns, {"metadata": {"name": "fg"}})
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "fg-dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "fg", "uid": owner.metadata.uid}]}})
    v1.delete_namespaced_config_map("fg", ns, propagation_policy="Foreground")
    wait_for(lambda: not v1.list_namespaced_config_map(ns).items)


def test_namespace_deletion_removes_contents(v1: client.CoreV1Api) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    v1.create_namespace({"metadata": {"name": name}})
    v1.create_namespaced_pod(name, pod_body("p", args=["a"]))
    v1.create_namespaced_secret(name, {"metadata": {"name": "s"}})
    deleted = json.loads(v1.delete_namespace(name, _preload_content=False).data)
    assert (deleted["kind"], deleted["status"]["phase"]) == ("Namespace", "Terminating")
    wait_for(lambda: name not in {n.metadata.name for n in v1.list_namespace().items})
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_secret("s", name)
    assert err.value.status == 404


def test_pod_logs_plain_tail_and_follow(v1: client.CoreV1Api, ns: str) -> None:
    v1.create_namespaced_pod(ns, pod_body("talker", args=["one", "two", "three"]))
    # follow=True streams until the container ends.
    wait_for(lambda: v1.read_namespaced_pod("talker", ns).status.phase in ("Running", "Succeeded"))
    stream = v1.read_namespaced_pod_log("talker", ns, follow=True, _preload_content=False)
    assert stream.data.decode() == "one\ntwo\nthree\n"
    assert v1.read_namespaced_pod_log("talker", ns) == "one\ntwo\nthree\n"
    assert v1.read_namespaced_pod_log("talker", ns, tail_lines=1) == "three\n"
    stamped = v1.read_namespaced_pod_log("talker", ns, timestamps=True).splitlines()
    assert stamped[0].endswith("Z one") and stamped[0][:4].isdigit()
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_pod_log("talker", ns, container="nope")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        v1.read_namespaced_pod_log("ghost", ns)
    assert err.value.status == 404


def test_graceful_delete_of_running_pod_kills_it(api: tuple[FakeKubeAPI, client.ApiClient], v1: client.CoreV1Api,
                                                 ns: str) -> None:
    v1.create_namespaced_pod(ns, pod_body("long", args=[str(i) for i in range(400)]))  # ~20 s of output
    wait_for(lambda: v1.read_namespaced_pod("long", ns).status.phase == "Running")
    deleted = v1.delete_namespaced_pod("long", ns)
    assert deleted.metadata.deletion_timestamp is not None
    wait_for(lambda: not v1.list_namespaced_pod(ns, field_selector="metadata.name=long").items, timeout=5)
    reasons = {e.reason for e in v1.list_namespaced_event(ns, field_selector="involvedObject.name=long").items}
    assert "Killing" in reasons


def test_status_subresource_and_dry_run(v1: client.CoreV1Api, ns: str) -> None:
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "dry"}}, dry_run="All")
    assert v1.list_namespaced_config_map(ns).items == []
    v1.create_namespaced_pod(ns, pod_body("st"))
    pod = v1.patch_namespaced_pod_status("st", ns, {"status": {"message": "hello"}})
    assert pod.status.message == "hello"
    pod = v1.patch_namespaced_pod("st", ns, {"metadata": {"annotations": {"a": "b"}}, "status": {"message": "x"}})
    assert pod.metadata.annotations == {"a": "b"} and pod.status.message == "hello"  # status ignored on main


def test_token_is_required_when_set(tmp_path: Path) -> None:
    with FakeKubeAPI(token="right") as fake:
        good = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path / "kc")))
        assert client.CoreV1Api(good).list_namespace().items
        bad_cfg = client.Configuration(host=fake.url)
        bad_cfg.api_key = {"authorization": "Bearer wrong"}
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(client.ApiClient(bad_cfg)).list_namespace()
        assert err.value.status == 401
        good.close()


async def test_kubernetes_asyncio_client_works(api: tuple[FakeKubeAPI, client.ApiClient], tmp_path: Path) -> None:
    from kubernetes_asyncio import client as aclient
    from kubernetes_asyncio import config as aconfig
    from kubernetes_asyncio import watch as awatch

    fake = api[0]
    kubeconfig = fake.write_kubeconfig(tmp_path / "kc")
    cfg = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    async with aclient.ApiClient(cfg) as api_client:
        v1 = aclient.CoreV1Api(api_client)
        name = f"async-{uuid.uuid4().hex[:6]}"
        await v1.create_namespace({"metadata": {"name": name}})
        rv = (await v1.list_namespaced_pod(name)).metadata.resource_version
        await asyncio.gather(*(v1.create_namespaced_pod(name, pod_body(f"p{i}", labels={"batch": "a"}))
                               for i in range(20)))
        done: set[str] = set()
        w = awatch.Watch()
        async for ev in w.stream(v1.list_namespaced_pod, name, resource_version=rv, timeout_seconds=10):
            if ev["object"].status.phase == "Succeeded":
                done.add(ev["object"].metadata.name)
            if len(done) == 20:
                w.stop()
        assert len(done) == 20
        await v1.delete_collection_namespaced_pod(name, label_selector="batch=a")
        assert (await v1.list_namespaced_pod(name)).items == []
        with pytest.raises(aclient.ApiException) as err:
            await v1.read_namespaced_pod("nope", name)
        assert err.value.status == 404


def test_https_kubeconfig_and_in_cluster_config(tmp_path: Path) -> None:
    from kubernetes.config.incluster_config import InClusterConfigLoader

    with FakeKubeAPI(tls=True, token="sa-token") as fake:
        assert fake.url.startswith("https://127.0.0.1:")
        api_client = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path / "kc")))
        assert [n.metadata.name for n in client.CoreV1Api(api_client).list_namespace().items][:1] == ["default"]
        api_client.close()
        files = fake.write_incluster_files(tmp_path / "sa")
        cfg = client.Configuration()
        InClusterConfigLoader(token_filename=files["token_file"], cert_filename=files["ca_file"],
                              environ={k: v for k, v in files.items() if k.startswith("KUBERNETES_")}
                              ).load_and_set(cfg)
        incluster = client.ApiClient(cfg)
        assert client.CoreV1Api(incluster).read_namespace("default").status.phase == "Active"
        incluster.close()
        # Without the CA the certificate is refused, as a real server's would be.
        plain = client.Configuration(host=fake.url)
        plain.api_key = {"authorization": "Bearer sa-token"}
        plain.retries = False
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            client.CoreV1Api(client.ApiClient(plain)).list_namespace()
