"""Settings of the ``kubernetes`` backend (one ``OPENFORGE_K8S_*`` environment variable per field).

Constructor keyword arguments of :class:`~training.orchestrator.kubernetes.backend.KubernetesBackend`
override them (``make_backend("kubernetes", namespace=..., warm_pool=...)``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class KubeSettings(BaseSettings):
    """Where pods go, what they look like, and how fast the backend may create them."""

    model_config = SettingsConfigDict(env_prefix="OPENFORGE_K8S_", extra="ignore")

    # -- cluster -----------------------------------------------------------------------
    kubeconfig: str | None = Field(default=None, description="kubeconfig path (default: KUBECONFIG / ~/.kube/config).")
    context: str | None = Field(default=None, description="kubeconfig context (default: the current one).")
    in_cluster: bool | None = Field(default=None, description="Use the pod's service account (default: when running in a pod).")
    namespace: str = Field(default="openforge-rollouts", description="Namespace of rollout pods (must exist).")
    instance: str = Field(default="default", description="Orchestrator name: orphan cleanup touches only its own objects.")
    run_id: str | None = Field(default=None, description="Run id label (default: fresh per backend).")
    # -- images and runtime --------------------------------------------------------------
    registry: str = Field(default="localhost:5000", description="Registry task images are pushed to / pulled from.")
    image_source: Literal["build", "content"] = Field(
        default="build",
        description="build: docker-build and push each task image; content: the tag is the environment's "
                    "content hash and the image was pushed beforehand.")
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = "IfNotPresent"
    image_pull_secrets: list[str] = Field(default_factory=list)
    runtime_image: str = Field(default="localhost:5000/openforge-runtime:latest",
                               description="Image holding /opt/openforge (python, venv, repo) for the runtime initContainer.")
    runtime_dir: str = Field(default="/opt/openforge", description="Where the runtime is mounted in the sandbox container.")
    runtime_python: str = Field(default="/opt/openforge/python/bin/python3", description="Interpreter inside the runtime.")
    run_as_user: int = Field(default=65532, description="Non-root uid of every container.")
    service_account: str | None = Field(default=None, description="Service account of rollout pods (none mounted).")
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, object]] = Field(default_factory=list)
    # -- control endpoint (pods fetch their assignment and, after the agent, the tests) ----
    control_host: str = Field(default="127.0.0.1", description="Bind address of the control endpoint.")
    control_port: int = Field(default=0, description="Port of the control endpoint (0: a free one).")
    control_url: str | None = Field(default=None, description="URL pods reach the control endpoint at (default: bind address).")
    egress_rules: list[dict[str, object]] = Field(
        default_factory=list,
        description="Extra NetworkPolicy egress rules (JSON), e.g. a podSelector for an in-cluster proxy/orchestrator.")
    # -- lifecycle -----------------------------------------------------------------------
    max_pods: int = Field(default=500, ge=1, description="Cap on this backend's pods at once (warm pods included).")
    create_qps: float = Field(default=200.0, gt=0, description="Pod creations per second (token bucket).")
    create_burst: int = Field(default=50, ge=1)
    resync_seconds: float = Field(default=10.0, gt=0, description="Full list of pods to catch missed watch events.")
    pending_timeout: float = Field(default=300.0, gt=0, description="Pending longer than this -> unschedulable/start_failed.")
    unschedulable_grace: float = Field(default=60.0, ge=0, description="PodScheduled=False/Unschedulable tolerated this long.")
    image_pull_grace: float = Field(default=30.0, ge=0, description="ErrImagePull/ImagePullBackOff tolerated this long.")
    delete_grace_seconds: int = Field(default=5, ge=0, description="gracePeriodSeconds of pod deletions.")
    warm_pool: int = Field(default=0, ge=0, description="Pre-started pods kept per environment image (0: off).")
    max_task_bytes: int = Field(default=64 << 20, description="Largest task/tests archive sent through the control endpoint.")


def load_settings(**overrides: object) -> KubeSettings:
    """Settings from the environment with ``overrides`` applied (unknown names are an error)."""
    unknown = sorted(set(overrides) - set(KubeSettings.model_fields))
    if unknown:
        raise ValueError(f"kubernetes backend: unknown option(s) {', '.join(unknown)}")
    return KubeSettings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
