"""Make a sandbox backend by name (``local``, ``docker``, ``kubernetes``) and say which ones can run here."""

from __future__ import annotations

import logging
from pathlib import Path

from training.orchestrator.backend import SandboxBackend, SandboxError

log = logging.getLogger(__name__)

BACKENDS = ("local", "docker", "kubernetes")


def make_backend(name: str, *, rollouts_dir: Path | None = None, **options: object) -> SandboxBackend:
    """A backend instance; raises :class:`SandboxError` naming what is missing."""
    if name == "local":
        from training.orchestrator.local import LocalBackend

        return LocalBackend(rollouts_dir=rollouts_dir, **options)  # type: ignore[arg-type]
    if name == "docker":
        from training.orchestrator.docker_backend import DockerBackend

        return DockerBackend(rollouts_dir=rollouts_dir, **options)  # type: ignore[arg-type]
    if name == "kubernetes":
        from training.orchestrator.kubernetes import KubernetesBackend

        return KubernetesBackend(rollouts_dir=rollouts_dir, **options)
    raise SandboxError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")


def available_backends() -> dict[str, str | None]:
    """Backend name -> None when usable here, else the reason it is not."""
    out: dict[str, str | None] = {"local": None}
    try:
        from training.orchestrator.docker_backend import docker_unavailable_reason

        out["docker"] = docker_unavailable_reason()
    except ImportError as exc:
        out["docker"] = f"docker SDK missing: {exc}"
    out["kubernetes"] = _kubernetes_unavailable_reason()
    return out


def _kubernetes_unavailable_reason() -> str | None:
    """None when a kubeconfig or an in-cluster service account is there (not contacted here)."""
    import os

    try:
        import kubernetes_asyncio  # noqa: F401
    except ImportError as exc:
        return f"kubernetes_asyncio missing: {exc}"
    from training.orchestrator.kubernetes.api import SERVICE_ACCOUNT_TOKEN
    from training.orchestrator.kubernetes.config import KubeSettings

    kubeconfig = KubeSettings().kubeconfig or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    if SERVICE_ACCOUNT_TOKEN.exists() or any(Path(p).is_file() for p in kubeconfig.split(os.pathsep) if p):
        return None
    return f"no kubeconfig ({kubeconfig}) and no in-cluster service account"
