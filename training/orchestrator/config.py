"""Orchestrator settings (one ``OPENFORGE_*`` environment variable per field).

Kept in the orchestrator's own room: the docker engine address, the local base image and
the table mapping unpullable ``FROM`` images onto it, and the local isolation mode.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: ``FROM`` images (fnmatch patterns, tag included) that map onto the local base image.
DEFAULT_IMAGE_ALIASES: dict[str, str] = {
    "debian*": "{base}",
    "ubuntu*": "{base}",
    "python:3*": "{base}",
    "python:*slim*": "{base}",
    "python": "{base}",
    "buildpack-deps*": "{base}",
    "library/debian*": "{base}",
    "library/ubuntu*": "{base}",
    "library/python*": "{base}",
    "docker.io/library/*": "{base}",
    "ghcr.io/laude-institute/t-bench/*": "{base}",
    # claw images (environments/claw/docker.py): the backend mounts our runtime (venv with
    # the service deps, the repo, the harness tools), so the plain base image serves them.
    "openforge/claw-base*": "{base}",
}


class OrchestratorSettings(BaseSettings):
    """Settings of the sandbox backends; each field is read from ``OPENFORGE_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="OPENFORGE_", extra="ignore")

    docker_host: str | None = Field(default=None, description="Docker engine URL (else DOCKER_HOST / default socket).")
    base_image: str = Field(default="openforge/base:bookworm", description="Local base image (scripts/build-base-image.sh).")
    image_aliases: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_IMAGE_ALIASES),
        description="JSON object: FROM pattern -> local image ('{base}' = base_image).",
    )
    local_isolation: Literal["auto", "bubblewrap", "process"] = Field(
        default="auto", description="Local backend isolation: bubblewrap when available, else a plain process."
    )
    sandbox_python: str | None = Field(default=None, description="Python that runs the runner (default: this one).")
    sandbox_uid: int = Field(
        default=1000, ge=0,
        description="uid/gid of the agent in a sandbox. bubblewrap: its uid inside the user namespace "
        "(maps to ours outside, so file access is unchanged). docker, when we are root: the container's user "
        "(its bind-mounted dirs are handed over, the image's WORKDIR chowned); as non-root we run it as us. "
        "0: root (no capabilities either way).",
    )


@lru_cache(maxsize=1)
def get_orchestrator_settings() -> OrchestratorSettings:
    """Cached settings (call ``get_orchestrator_settings.cache_clear()`` in tests)."""
    return OrchestratorSettings()
