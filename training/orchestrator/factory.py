"""Make a sandbox backend by name (``local``, ``docker``) and say which ones can run here."""

from __future__ import annotations

import logging
from pathlib import Path

from training.orchestrator.backend import SandboxBackend, SandboxError

log = logging.getLogger(__name__)

BACKENDS = ("local", "docker")


def make_backend(name: str, *, rollouts_dir: Path | None = None, **options: object) -> SandboxBackend:
    """A backend instance; raises :class:`SandboxError` naming what is missing."""
    if name == "local":
        from training.orchestrator.local import LocalBackend

        return LocalBackend(rollouts_dir=rollouts_dir, **options)  # type: ignore[arg-type]
    if name == "docker":
        from training.orchestrator.docker_backend import DockerBackend

        return DockerBackend(rollouts_dir=rollouts_dir, **options)  # type: ignore[arg-type]
    if name == "kubernetes":
        raise SandboxError("backend 'kubernetes' is not implemented yet (its own issue)")
    raise SandboxError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")


def available_backends() -> dict[str, str | None]:
    """Backend name -> None when usable here, else the reason it is not."""
    out: dict[str, str | None] = {"local": None}
    try:
        from training.orchestrator.docker_backend import docker_unavailable_reason

        out["docker"] = docker_unavailable_reason()
    except ImportError as exc:
        out["docker"] = f"docker SDK missing: {exc}"
    return out
