"""Pod, Secret and NetworkPolicy manifests of the kubernetes backend (pure functions)."""

from __future__ import annotations

import pytest

from training.orchestrator.kubernetes.manifest import (
    LABEL_ROLLOUT,
    EgressTarget,
    OwnerRef,
    PodPlan,
    egress_targets,
    label_value,
    network_policy,
    pod_name,
    pod_secret,
    rollout_pod,
)

OWNER = OwnerRef("openforge-run-abc", "11111111-2222-3333-4444-555555555555")


def plan(**kw: object) -> PodPlan:
    base: dict[str, object] = {
        "name": "openforge-r-0123", "image": "reg:5000/openforge-task:abc", "workdir": "/app",
        "labels": {"openforge.dev/run": "abc", LABEL_ROLLOUT: "0123"}, "secret_name": "openforge-r-0123",
        "control_url": "http://10.0.0.5:7000", "cpus": 2.0, "memory_mb": 2048, "storage_mb": 4096,
        "deadline_seconds": 600.4}
    base.update(kw)
    return PodPlan(**base)  # type: ignore[arg-type]


def pod(**kw: object) -> dict:
    return rollout_pod(plan(**kw), namespace="ns", owner=OWNER, runtime_image="reg:5000/openforge-runtime:1",
                       runtime_dir="/opt/openforge", runtime_python="/opt/openforge/python/bin/python3")


def test_pod_is_locked_down_and_sized_from_task_toml() -> None:
    p = pod()
    spec = p["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == 601  # rounded up, never below the timeout
    assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    for c in spec["containers"] + spec["initContainers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] is True
    main = spec["containers"][0]
    assert main["resources"]["requests"] == main["resources"]["limits"] == {
        "cpu": "2000m", "memory": "2048Mi", "ephemeral-storage": "4096Mi"}
    assert main["image"] == "reg:5000/openforge-task:abc" and main["workingDir"] == "/app"
    assert main["command"][-1] == "/opt/openforge/repo/training/orchestrator/kubernetes/pod_entry.py"
    mounts = {m["mountPath"]: m for m in main["volumeMounts"]}
    assert mounts["/opt/openforge"]["readOnly"] is True
    assert {"/app", "/task", "/logs", "/tests", "/solution", "/tmp"} <= set(mounts)
    env = {e["name"]: e for e in main["env"]}
    assert env["OPENFORGE_POD_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "openforge-r-0123", "key": "pod-key"}
    assert "value" not in env["OPENFORGE_POD_KEY"]  # never inline
    assert p["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
    assert p["metadata"]["labels"][LABEL_ROLLOUT] == "0123"
    # the workdir seed runs the task image, the runtime copy the runtime image
    inits = {c["name"]: c for c in spec["initContainers"]}
    assert inits["workdir"]["image"] == main["image"] and inits["runtime"]["image"].endswith("openforge-runtime:1")


def test_warm_pod_has_no_deadline_and_bad_workdir_is_refused() -> None:
    assert "activeDeadlineSeconds" not in pod(deadline_seconds=None)["spec"]
    with pytest.raises(ValueError, match="workdir"):
        pod(workdir="/tests")
    with pytest.raises(ValueError, match="workdir"):
        pod(workdir="relative")


def test_label_values_are_valid_and_distinct() -> None:
    assert label_value("claw-gmail-invoice-reply") == "claw-gmail-invoice-reply"
    a, b = label_value("tasks/a b"), label_value("tasks/a:b")
    assert a != b
    long = label_value("x" * 200)
    for v in (a, b, long):
        assert len(v) <= 63 and v[0].isalnum() and v[-1].isalnum()
        assert all(ch.isalnum() or ch in "-_." for ch in v)
    assert len(pod_name("r", "F" * 80)) <= 63 and pod_name("r", "ABC") == "openforge-r-abc"


def test_secret_carries_string_data_and_owner() -> None:
    s = pod_secret("n", "ns", {"a": "b"}, OWNER, {"pod-key": "k"})
    assert s["stringData"] == {"pod-key": "k"} and s["type"] == "Opaque"
    assert s["metadata"]["ownerReferences"][0]["name"] == OWNER.name


def test_network_policy_allows_only_the_targets() -> None:
    targets = egress_targets("10.0.0.7", 9000, []) + egress_targets("proxy.svc", 80, ["10.1.2.3", "fd00::1"])
    assert targets == [EgressTarget("10.0.0.7/32", 9000), EgressTarget("10.1.2.3/32", 80), EgressTarget("fd00::1/128", 80)]
    np = network_policy("p", "ns", {}, {"openforge.dev/run": "abc"}, targets, allow_dns=True, owner=None)
    spec = np["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["ingress"] == []
    assert spec["podSelector"] == {"matchLabels": {"openforge.dev/run": "abc"}}
    cidrs = [rule["to"][0]["ipBlock"]["cidr"] for rule in spec["egress"] if "to" in rule]
    assert sorted(cidrs) == ["10.0.0.7/32", "10.1.2.3/32", "fd00::1/128"]
    dns = [rule for rule in spec["egress"] if "to" not in rule]
    assert dns and {p["port"] for p in dns[0]["ports"]} == {53}
    no_dns = network_policy("p", "ns", {}, {}, targets[:1], allow_dns=False, owner=None)
    assert all("to" in rule for rule in no_dns["spec"]["egress"])


def test_extra_egress_rules_for_in_cluster_peers() -> None:
    rule = {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "openforge-proxy"}}}],
            "ports": [{"protocol": "TCP", "port": 9000}]}
    np = network_policy("p", "ns", {}, {}, [], allow_dns=False, owner=None, extra_rules=[rule])
    assert np["spec"]["egress"] == [rule]
