"""The backend's in-cluster configuration (a pod's service account) against the fake API
server over HTTPS: the token and CA files it reads, the KUBERNETES_SERVICE_* variables it
finds, a bearer token the server demands — and no kubeconfig anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from testkit.tasks import make_task
from training.orchestrator.backend import SandboxError
from training.orchestrator.kubernetes import api as kube_api
from training.orchestrator.scheduler import Scheduler, new_rollout_id

TLS = {"tls": True, "token": "sa-token"}


def service_account(cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Files and env of a pod's service account pointing at the fake; no kubeconfig."""
    files = cluster.api.write_incluster_files(tmp_path / "serviceaccount")
    monkeypatch.setattr(kube_api, "SERVICE_ACCOUNT_TOKEN", Path(files["token_file"]))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", files["KUBERNETES_SERVICE_HOST"])
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", files["KUBERNETES_SERVICE_PORT"])
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config to fall back on
    return Path(files["token_file"])


@pytest.mark.parametrize("cluster", [TLS], indirect=True)
async def test_rollout_with_the_in_cluster_service_account(cluster, k8s_backend, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert cluster.api.url.startswith("https://")
    service_account(cluster, tmp_path, monkeypatch)
    task = make_task(tmp_path / "bank")
    await cluster.image(task)
    backend = k8s_backend(kubeconfig=None)  # in_cluster unset: detected from the token file + env
    spec = RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness="oracle", timeout_sec=120)
    r = await Scheduler(backend).run_one(spec)
    assert (r.status, r.reward, r.error_kind) == (Outcome.ok, 1.0, None), r
    assert backend.api is not None and backend.api.api_client.configuration.host == cluster.api.url
    assert cluster.api.stats()["requests"] > 0


@pytest.mark.parametrize("cluster", [TLS], indirect=True)
async def test_wrong_token_or_ca_is_a_clear_setup_error(cluster, k8s_backend, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    token = service_account(cluster, tmp_path, monkeypatch)
    task = make_task(tmp_path / "bank")
    token.write_text("not-the-token")
    r = await Scheduler(k8s_backend(kubeconfig=None, in_cluster=True)).run_one(
        RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness="noop", timeout_sec=60))
    assert (r.status, r.error_kind) == (Outcome.infra_error, "start_failed") and "401" in r.error, r.error
    token.write_text("sa-token")
    token.with_name("ca.crt").write_bytes(b"")  # no CA: the loader refuses
    with pytest.raises(SandboxError, match="cannot load in-cluster service account"):
        await k8s_backend(kubeconfig=None, in_cluster=True).prewarm([])
