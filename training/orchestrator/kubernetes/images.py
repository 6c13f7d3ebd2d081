"""Which image a task's pod runs, and its WORKDIR.

One name for a task image in a registry, whichever source: ``<registry>/openforge-task:<sha20>``
where ``<sha20>`` is :func:`training.orchestrator.images.content_hash` of the task's
``environment/`` dir as written (no Docker engine needed to compute it).

- ``content`` (:class:`ContentImages`): the image was pushed under that name beforehand (CI,
  or a previous ``build`` run); WORKDIR is read from the Dockerfile.
- ``build`` (:class:`BuiltImages`): when the registry already has that name (HTTP API v2
  ``HEAD``), it is used as is — nothing is built or pushed again. Otherwise the docker
  backend's builder (``build_task_image``, local build cache) builds it and
  ``push_task_image`` pushes it under the content tag; WORKDIR is the built image's own.

A rebuilt base image (``FROM``) does not change the content tag: an image already in the
registry stays what it was (delete the tag to republish).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from environments.records import ErrorKind
from environments.taskdir import TaskDir
from training.orchestrator.backend import SandboxError
from training.orchestrator.dockerfile import parse_dockerfile
from training.orchestrator.images import (
    ImageBuildError,
    ImagePushError,
    build_task_image,
    content_tag,
    push_task_image,
    remote_ref,
)
from training.orchestrator.registry import RegistryError, registry_has_image

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodImage:
    ref: str  # what the pod pulls
    workdir: str


class ImageSource(Protocol):
    async def resolve(self, task: TaskDir) -> PodImage: ...


def _workdir(task_path: Path) -> str:
    dockerfile = task_path / "environment" / "Dockerfile"
    return parse_dockerfile(dockerfile).workdir if dockerfile.is_file() else "/app"


class ContentImages:
    """Tags from content hashes; images pushed ahead of time (see the module doc)."""

    def __init__(self, registry: str) -> None:
        self.registry = registry.rstrip("/")
        self._memo: dict[str, PodImage] = {}

    def _resolve(self, task_path: Path) -> PodImage:
        key = str(task_path)
        if key not in self._memo:
            self._memo[key] = PodImage(remote_ref(content_tag(task_path), self.registry), _workdir(task_path))
        return self._memo[key]

    def resolve_now(self, task_path: Path) -> PodImage:
        """Blocking (hashes the environment dir once per task path)."""
        return self._resolve(task_path)

    async def resolve(self, task: TaskDir) -> PodImage:
        hit = self._memo.get(str(task.path))
        return hit if hit is not None else await asyncio.to_thread(self._resolve, task.path)


class BuiltImages:
    """Use the registry's image of the content tag, else build it with the docker backend's
    builder and push it (see the module doc). Blocking work runs in threads."""

    def __init__(self, registry: str, *, docker_client: Any | None = None,
                 auth: tuple[str, str] | None = None) -> None:
        self.registry = registry.rstrip("/")
        self.auth = auth
        self._client = docker_client
        self._locks: dict[str, asyncio.Lock] = {}
        self._memo: dict[str, PodImage] = {}
        #: ``present``: found in the registry; ``built``: built here (not from the local cache);
        #: ``pushed``: pushed by this process.
        self.stats: dict[str, int] = {"present": 0, "built": 0, "pushed": 0}

    def _docker(self) -> Any:
        if self._client is None:
            import docker

            self._client = docker.from_env(timeout=600)
        return self._client

    def _build_and_push(self, task: TaskDir) -> PodImage:
        from training.orchestrator.config import get_orchestrator_settings

        tag = content_tag(task.path)
        remote = remote_ref(tag, self.registry)
        try:
            present = registry_has_image(remote, auth=self.auth)
        except RegistryError as exc:
            raise SandboxError(f"{remote}: {exc}", kind=ErrorKind.build_failed) from exc
        if present:
            self.stats["present"] += 1
            return PodImage(remote, _workdir(task.path))
        settings = get_orchestrator_settings()
        client = self._docker()
        try:
            image = build_task_image(client, task.path, base=settings.base_image, aliases=settings.image_aliases,
                                     timeout=task.config.environment.build_timeout_sec)
            self.stats["built"] += int(image.built)
            pushed = push_task_image(client, image.tag, self.registry, as_tag=tag)
        except (ImageBuildError, ImagePushError) as exc:
            raise SandboxError(str(exc), kind=ErrorKind.build_failed) from exc
        self.stats["pushed"] += 1
        return PodImage(pushed, image.workdir)

    async def resolve(self, task: TaskDir) -> PodImage:
        key = str(task.path)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._memo:
                self._memo[key] = await asyncio.to_thread(self._build_and_push, task)
            return self._memo[key]
