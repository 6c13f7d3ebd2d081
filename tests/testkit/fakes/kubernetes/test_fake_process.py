"""FakeKubeProcess: the same fake in a child process, driven through its control routes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client, config

from testkit.fakes.kubernetes import FakeKubeProcess

pytestmark = pytest.mark.slow


def test_process_mode_serves_the_real_client(tmp_path: Path) -> None:
    with FakeKubeProcess(nodes=[{"name": "n1", "cpu": "8", "memory": "8Gi", "pods": 10}]) as fake:
        api_client = config.new_client_from_config(str(fake.write_kubeconfig(tmp_path / "kc")))
        v1 = client.CoreV1Api(api_client)
        assert [n.metadata.name for n in v1.list_node().items] == ["n1"]
        fake.inject("kind=bad", "oom")
        for name, labels in (("good", {}), ("bad", {"kind": "bad"})):
            v1.create_namespaced_pod("default", {"metadata": {"name": name, "labels": labels}, "spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "img:1"}]}})
        deadline = time.monotonic() + 10
        phases: dict[str, str] = {}
        while time.monotonic() < deadline and set(phases.values()) != {"Succeeded", "Failed"}:
            phases = {p["metadata"]["name"]: p["status"]["phase"] for p in fake.pods("default")}
            time.sleep(0.05)
        assert phases == {"good": "Succeeded", "bad": "Failed"}
        stats = fake.stats()
        assert stats["pods"] == 2 and stats["requests"] >= 3 and stats["server_thread_cpu_s"] > 0
        with pytest.raises(ValueError, match="unknown failure"):
            fake.inject("a=b", "meteor")
        api_client.close()
    assert fake.proc is None
