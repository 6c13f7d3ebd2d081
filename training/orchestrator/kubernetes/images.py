"""Which image a task's pod runs, and its WORKDIR.

- ``content`` (:class:`ContentImages`): the tag is the content hash of the task's
  ``environment/`` dir (Dockerfile included) under the configured registry —
  ``<registry>/openforge-task:<sha20>``; the image was built and pushed beforehand (CI, or
  a previous ``build`` run). No Docker engine needed; WORKDIR is read from the Dockerfile.
- ``build`` (:class:`BuiltImages`): the docker backend's builder
  (``training.orchestrator.images.build_task_image``) builds the image once per content
  hash, then it is tagged under the registry and pushed; WORKDIR is the image's own.
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
from training.orchestrator.images import TASK_IMAGE_REPO, context_tar

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodImage:
    ref: str  # what the pod pulls
    workdir: str


class ImageSource(Protocol):
    async def resolve(self, task: TaskDir) -> PodImage: ...


def content_tag(task_path: Path) -> str:
    """``openforge-task:<sha20>`` of the environment dir's content (Dockerfile included)."""
    context = task_path / "environment"
    dockerfile = context / "Dockerfile"
    text = dockerfile.read_text(encoding="utf-8") if dockerfile.is_file() else ""
    return f"{TASK_IMAGE_REPO}:{context_tar(context, text)[1][:20]}"


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
            self._memo[key] = PodImage(f"{self.registry}/{content_tag(task_path)}", _workdir(task_path))
        return self._memo[key]

    def resolve_now(self, task_path: Path) -> PodImage:
        """Blocking (hashes the environment dir once per task path)."""
        return self._resolve(task_path)

    async def resolve(self, task: TaskDir) -> PodImage:
        hit = self._memo.get(str(task.path))
        return hit if hit is not None else await asyncio.to_thread(self._resolve, task.path)


class BuiltImages:
    """Build with the docker backend's builder, tag under the registry, push (blocking work in threads)."""

    def __init__(self, registry: str, *, docker_client: Any | None = None) -> None:
        self.registry = registry.rstrip("/")
        self._client = docker_client
        self._locks: dict[str, asyncio.Lock] = {}
        self._memo: dict[str, PodImage] = {}

    def _build_and_push(self, task: TaskDir) -> PodImage:
        from training.orchestrator.config import get_orchestrator_settings
        from training.orchestrator.images import ImageBuildError, build_task_image

        if self._client is None:
            import docker

            self._client = docker.from_env(timeout=600)
        settings = get_orchestrator_settings()
        try:
            image = build_task_image(self._client, task.path, base=settings.base_image, aliases=settings.image_aliases,
                                     timeout=task.config.environment.build_timeout_sec)
        except ImageBuildError as exc:
            raise SandboxError(str(exc), kind=ErrorKind.build_failed) from exc
        repo, _, tag = image.tag.partition(":")
        remote = f"{self.registry}/{repo}"
        try:
            self._client.images.get(image.tag).tag(remote, tag=tag)
            for line in self._client.images.push(remote, tag=tag, stream=True, decode=True):
                if isinstance(line, dict) and line.get("error"):
                    raise SandboxError(f"push {remote}:{tag}: {line['error']}", kind=ErrorKind.build_failed)
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"push {remote}:{tag}: {exc}", kind=ErrorKind.build_failed) from exc
        return PodImage(f"{remote}:{tag}", image.workdir)

    async def resolve(self, task: TaskDir) -> PodImage:
        key = str(task.path)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._memo:
                self._memo[key] = await asyncio.to_thread(self._build_and_push, task)
            return self._memo[key]
