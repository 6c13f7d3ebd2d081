"""configs/k8s/ manifests: schema-valid for a pinned Kubernetes version (kubernetes-validate,
strict: unknown fields fail), least-privilege RBAC, a NetworkPolicy that selects rollout
pods, and an example pod identical to what the kubernetes backend builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

K8S_VERSION = "1.31.0"  # the version the fake API server reports, too
CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "k8s"


def documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    return docs


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for _f, d in documents() if d["kind"] == kind]


def validate(doc: dict[str, Any]) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_expected_manifests_exist() -> None:
    kinds = sorted(d["kind"] for _f, d in documents())
    assert kinds == sorted(["Namespace", "ServiceAccount", "Role", "RoleBinding",
                            "NetworkPolicy", "NetworkPolicy", "ResourceQuota", "LimitRange", "Pod"])
    assert (CONFIGS / "README.md").is_file() and (CONFIGS / "prefect-kubernetes.md").is_file()


@pytest.mark.parametrize("name,doc", documents(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_manifest_is_schema_valid(name: str, doc: dict[str, Any]) -> None:
    validate(doc)


def test_validator_rejects_bad_manifests() -> None:
    from kubernetes_validate import ValidationError

    pod = by_kind("Pod")[0]
    typo = {**pod, "spec": {**pod["spec"], "restartPolicyy": "Never"}}
    with pytest.raises(ValidationError):
        validate(typo)
    nameless = {**pod, "spec": {**pod["spec"], "containers": [{"image": "x"}]}}
    with pytest.raises(ValidationError):
        validate(nameless)


def test_rbac_is_least_privilege() -> None:
    role = by_kind("Role")[0]
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                grants[(group, res)] = set(rule["verbs"])
    for (group, res), verbs in grants.items():
        assert "*" not in verbs and "*" not in res and group != "*", (group, res)
    assert set(grants) == {("", "pods"), ("", "pods/log"), ("", "secrets"), ("", "configmaps"), ("", "events"),
                           ("networking.k8s.io", "networkpolicies")}
    assert grants[("", "pods/log")] == {"get"}
    assert grants[("", "events")] == {"get", "list", "watch"}
    assert not grants[("", "secrets")] & {"watch", "update", "patch"}
    assert "pods/exec" not in {res for _g, res in grants}
    # nothing cluster-wide: the backend never reads Namespace objects (a missing namespace is
    # the 404 of its first create)
    assert not by_kind("ClusterRole") and not by_kind("ClusterRoleBinding")
    sa = by_kind("ServiceAccount")[0]["metadata"]
    for binding in by_kind("RoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]


def test_network_policy_selects_rollout_pods_and_allows_only_proxy_control_dns() -> None:
    pod_labels = by_kind("Pod")[0]["metadata"]["labels"]
    policies = {p["metadata"]["name"]: p["spec"] for p in by_kind("NetworkPolicy")}
    assert policies["default-deny-all"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    spec = policies["rollouts-egress-proxy-only"]
    assert all(pod_labels.get(k) == v for k, v in spec["podSelector"]["matchLabels"].items())
    assert spec["ingress"] == [] and set(spec["policyTypes"]) == {"Ingress", "Egress"}
    targets = sorted((peer["podSelector"]["matchLabels"].get("app.kubernetes.io/name")
                      or peer["podSelector"]["matchLabels"].get("k8s-app"),
                      tuple(sorted((p["protocol"], p["port"]) for p in rule["ports"])))
                     for rule in spec["egress"] for peer in rule["to"])
    assert targets == [("kube-dns", (("TCP", 53), ("UDP", 53))), ("openforge-orchestrator", (("TCP", 9000),)),
                       ("openforge-orchestrator", (("TCP", 9100),)), ("openforge-proxy", (("TCP", 9000),))]
    namespaces = {d["metadata"].get("namespace") for _f, d in documents() if d["kind"] != "Namespace"}
    assert namespaces == {by_kind("Namespace")[0]["metadata"]["name"]}


def test_network_policy_lets_rollout_pods_reach_the_flow_pods_in_process_proxy() -> None:
    """The flow pods of prefect-kubernetes.yaml run the proxy in-process (RolloutService), on
    every interface and a port of OPENFORGE_PROXY_PORTS: whatever labels their job variables
    give them, the static policy's proxy rule selects them and opens exactly that range."""
    from training.proxy.server import parse_ports

    deploy = yaml.safe_load((CONFIGS.parents[1] / "prefect-kubernetes.yaml").read_text())
    job_variables = deploy["definitions"]["job_variables"].values()
    spec = {p["metadata"]["name"]: p["spec"] for p in by_kind("NetworkPolicy")}["rollouts-egress-proxy-only"]
    namespace = deploy["definitions"]["job_variables"]["cpu"]["namespace"]
    for jv in job_variables:
        assert jv["env"]["OPENFORGE_PROXY_HOST"] == "0.0.0.0", "a proxy on loopback is unreachable from rollout pods"
        ports = parse_ports(jv["env"]["OPENFORGE_PROXY_PORTS"])
        proxy_peers = [peer for rule in spec["egress"] for port in rule["ports"]
                       if port["protocol"] == "TCP" and port["port"] == ports.start
                       and port.get("endPort", port["port"]) == ports.stop - 1 for peer in rule["to"]]
        assert any(all(jv["labels"].get(k) == v for k, v in peer["podSelector"]["matchLabels"].items())
                   and peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": namespace}
                   for peer in proxy_peers), jv["labels"]


def test_example_pod_is_what_the_backend_builds() -> None:
    from training.orchestrator.kubernetes.manifest import OwnerRef, PodPlan, rollout_pod

    doc = by_kind("Pod")[0]
    meta, container = doc["metadata"], doc["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    plan = PodPlan(name=meta["name"], image=container["image"], workdir=container["workingDir"],
                   labels=meta["labels"], annotations=meta["annotations"],
                   secret_name=env["OPENFORGE_POD_KEY"]["valueFrom"]["secretKeyRef"]["name"],
                   control_url=env["OPENFORGE_CONTROL_URL"]["value"], cpus=2, memory_mb=2048, storage_mb=10240,
                   deadline_seconds=doc["spec"]["activeDeadlineSeconds"])
    owner = meta["ownerReferences"][0]
    built = rollout_pod(plan, namespace=meta["namespace"], owner=OwnerRef(owner["name"], owner["uid"]),
                        runtime_image=doc["spec"]["initContainers"][0]["image"], runtime_dir="/opt/openforge",
                        runtime_python=container["command"][0])
    assert built == doc


def test_backend_objects_are_schema_valid() -> None:
    from training.orchestrator.kubernetes.manifest import (
        EgressTarget,
        OwnerRef,
        network_policy,
        owner_configmap,
        pod_secret,
    )

    owner = OwnerRef("openforge-run-x", "8c6f1c1e-5a7d-4f5e-9a57-1f2d3c4b5a69")
    labels = {"app.kubernetes.io/managed-by": "openforge"}
    validate(owner_configmap("openforge-run-x", "ns", labels, {"run": "x"}))
    validate(pod_secret("openforge-pod-x", "ns", labels, owner, {"pod-key": "k", "rollout-token": "t"}))
    validate(network_policy("openforge-net-x", "ns", labels, labels, [EgressTarget("10.0.0.5/32", 9000)],
                            allow_dns=True, owner=owner))


def test_manifests_apply_to_the_fake_api_server(tmp_path: Path) -> None:
    """The namespaced objects the fake serves are accepted by a (fake) API server as well."""
    from kubernetes import client, config, utils

    from testkit.fakes.kubernetes import FakeKubeAPI

    served = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "Pod"}
    with FakeKubeAPI() as api:
        api_client = config.new_client_from_config(str(api.write_kubeconfig(tmp_path / "kc")))
        try:
            for kind in ("Namespace", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "Pod"):
                for doc in by_kind(kind):
                    utils.create_from_dict(api_client, doc)
            names = {p["metadata"]["name"] for p in api.pods("openforge-rollouts")}
            assert names == {by_kind("Pod")[0]["metadata"]["name"]}
            assert served <= {d["kind"] for _f, d in documents()}
            policies = client.NetworkingV1Api(api_client).list_namespaced_network_policy("openforge-rollouts")
            assert len(policies.items) == 2
        finally:
            api_client.close()
