"""Task images for the docker backend: FROM aliasing and content-hash build cache.

No public registry is reachable here, so ``FROM`` images that are not present locally are
mapped through an alias table (fnmatch patterns -> local image, ``{base}`` = the base image
made by scripts/build-base-image.sh). The rewritten Dockerfile and the build context are
hashed; the image is tagged ``openforge-task:<hash>`` and built once (per-tag lock,
``--network host`` so ``RUN apt-get``/``pip`` reach the package mirrors).
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import logging
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

log = logging.getLogger(__name__)

TASK_IMAGE_REPO = "openforge-task"
BUILD_DOCKERFILE = "Dockerfile.openforge"


class ImageBuildError(RuntimeError):
    """The task image could not be built; the message names the Dockerfile and the step."""


#: Local images OpenForge's scripts build (no registry has them): FROM pattern -> the script.
LOCAL_IMAGE_SCRIPTS: dict[str, str] = {
    "openforge/base*": "scripts/build-base-image.sh",
    "openforge/computer-base*": "scripts/build-gui-images.sh",
    "openforge/browser-base*": "scripts/build-gui-images.sh",
}


def unbuilt_local_image(mapping: dict[str, str], exists: Any) -> str | None:
    """One line naming the first FROM image that only a local script makes and is absent."""
    for original, used in mapping.items():
        if original.startswith("COPY") or exists(used):
            continue
        for pattern, script in LOCAL_IMAGE_SCRIPTS.items():
            if fnmatch.fnmatch(used, pattern):
                return f"FROM {used}: image not built here (run {script})"
    return None


@dataclass(frozen=True)
class TaskImage:
    tag: str
    workdir: str
    built: bool  # False: taken from the cache
    from_images: dict[str, str]  # original FROM -> image used


def _strip_library(ref: str) -> str:
    for prefix in ("docker.io/library/", "library/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def resolve_from(ref: str, *, exists: Any, aliases: dict[str, str], base: str) -> str:
    """The image to use for ``FROM ref``: itself when present locally, else its alias."""
    if exists(ref):
        return ref
    short = _strip_library(ref)
    if short != ref and exists(short):
        return short
    for pattern, target in aliases.items():
        if fnmatch.fnmatch(ref, pattern) or fnmatch.fnmatch(short, pattern):
            return target.replace("{base}", base)
    return ref


def rewrite_froms(text: str, resolve: Any, *, provided: Any = None) -> tuple[str, dict[str, str]]:
    """Rewrite each ``FROM image`` line through ``resolve`` (stage names are left alone).

    ``provided(image, src) -> bool`` says a ``COPY --from=image src ...`` of an image that is
    not present copies what the backend mounts at run time anyway (e.g. the harness tools
    dir); such lines are commented out and listed in the mapping as ``COPY --from=image``.
    """
    stages: set[str] = set()
    mapping: dict[str, str] = {}
    out: list[str] = []
    for line in text.splitlines():
        tokens = line.strip().split()
        if tokens and tokens[0].upper() == "COPY" and provided is not None:
            src_from = next((t.split("=", 1)[1] for t in tokens[1:] if t.startswith("--from=")), None)
            paths = [t for t in tokens[1:] if not t.startswith("--")]
            if src_from and src_from not in stages and paths and provided(src_from, paths[0]):
                mapping[f"COPY --from={src_from} {paths[0]}"] = "runtime mount"
                out.append("# provided by a runtime mount: " + line)
                continue
        if tokens and tokens[0].upper() == "FROM":
            args = [t for t in tokens[1:] if not t.startswith("--")]
            flags = [t for t in tokens[1:] if t.startswith("--")]
            if args:
                image = args[0]
                rest = args[1:]
                if len(rest) >= 2 and rest[0].upper() == "AS":
                    stages.add(rest[1])
                if image not in stages and "$" not in image:
                    new = resolve(image)
                    mapping[image] = new
                    line = " ".join(["FROM", *flags, new, *rest])
        out.append(line)
    return "\n".join(out) + "\n", mapping


def context_tar(context: Path, dockerfile_text: str) -> tuple[bytes, str]:
    """(tar bytes of the build context + rewritten Dockerfile, sha256 of both)."""
    digest = hashlib.sha256()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if context.is_dir():
            for dirpath, dirnames, filenames in os.walk(context):
                dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
                for name in sorted(filenames):
                    path = Path(dirpath) / name
                    rel = path.relative_to(context).as_posix()
                    data = path.read_bytes()
                    mode = path.stat().st_mode & 0o777
                    digest.update(f"{rel}\0{mode}\0{len(data)}\0".encode())
                    digest.update(data)
                    info = tarfile.TarInfo(rel)
                    info.size, info.mode, info.mtime = len(data), mode, 0
                    tar.addfile(info, io.BytesIO(data))
        data = dockerfile_text.encode()
        digest.update(f"{BUILD_DOCKERFILE}\0{len(data)}\0".encode())
        digest.update(data)
        info = tarfile.TarInfo(BUILD_DOCKERFILE)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), digest.hexdigest()


def content_hash(task_path: Path) -> str:
    """sha256 of a task's ``environment/`` dir as written (Dockerfile included, no FROM
    rewriting, no Docker engine needed): the name a task image is published under."""
    context = task_path / "environment"
    dockerfile = context / "Dockerfile"
    text = dockerfile.read_text(encoding="utf-8") if dockerfile.is_file() else ""
    return context_tar(context, text)[1]


def content_tag(task_path: Path) -> str:
    """``openforge-task:<sha20>`` of :func:`content_hash`: the tag in a registry (the kubernetes
    backend's ``build`` pushes under it, ``content`` pulls it). The local build-cache tag of
    :func:`build_task_image` differs: it also hashes the rewritten FROMs' image ids."""
    return f"{TASK_IMAGE_REPO}:{content_hash(task_path)[:20]}"


def environment_key(task_path: Path) -> str:
    """Hash of a task's environment dir (Dockerfile included): a backend's memo key."""
    return f"{task_path}:{content_hash(task_path)}"


def agent_user_layer(uid: int, mounted: tuple[str, ...] = (), *, own_workdir: bool = True) -> str:
    """Dockerfile lines that let a non-root agent (``uid``) own its WORKDIR (the workspace
    volume is seeded from it, ownership included; not with ``own_workdir=False``: a task's
    own ``[agent] user`` keeps the image's ownership, as in Harbor) and reach the host paths
    mounted at run time (an image's ``/root`` is 0700, the host interpreter may live under it)."""
    ancestors = sorted({str(a) for m in mounted for a in PurePosixPath(m).parents if str(a) != "/"})
    steps = [f'if [ "$(pwd)" != / ]; then chown -R {uid}:{uid} .; fi'] if own_workdir else []
    steps += [f'if [ -d "{a}" ]; then chmod o+x "{a}"; fi' for a in ancestors]
    lines = ["USER root", "RUN " + ("; ".join(steps) if steps else "true")]
    return "\n".join(lines) + "\n"


def build_task_image(client: Any, task_path: Path, *, base: str, aliases: dict[str, str],
                     timeout: float = 600.0, mounted: tuple[str, ...] = (), agent_uid: int | None = None,
                     docker_image: str | None = None, workdir: str | None = None,
                     ignore_dockerfile: bool = False, own_workdir: bool = True) -> TaskImage:
    """Build (or find cached) the image of ``task_path/environment/Dockerfile``. Blocking.
    With ``agent_uid``, a last layer (:func:`agent_user_layer`) readies it for that user.
    Without a Dockerfile (or with ``ignore_dockerfile``: a compose main service's ``image``),
    ``docker_image`` (Harbor's image-only task) is the image, else the base image with WORKDIR /app."""
    from docker.errors import APIError, ImageNotFound

    def exists(ref: str) -> bool:
        try:
            client.images.get(ref)
            return True
        except ImageNotFound:
            return False
        except APIError:
            return False

    dockerfile = task_path / "environment" / "Dockerfile"
    if docker_image and (ignore_dockerfile or not dockerfile.is_file()):
        text = f"FROM {docker_image}\n" + (f"WORKDIR {workdir}\n" if workdir else "")
    elif not dockerfile.is_file():
        text = f"FROM {base}\nWORKDIR /app\n"
    else:
        text = dockerfile.read_text(encoding="utf-8")
    def provided(image: str, src: str) -> bool:
        return not exists(image) and any(src == m or src.startswith(m.rstrip("/") + "/") for m in mounted)

    text, mapping = rewrite_froms(text, lambda ref: resolve_from(ref, exists=exists, aliases=aliases, base=base),
                                  provided=provided)
    missing = unbuilt_local_image(mapping, exists)
    if missing:
        raise ImageBuildError(f"{dockerfile}: {missing}")
    if agent_uid:
        text = text.rstrip("\n") + "\n" + agent_user_layer(agent_uid, mounted, own_workdir=own_workdir)
    image_ids = ""
    for used in sorted({v for k, v in mapping.items() if not k.startswith("COPY")}):
        try:
            image_ids += client.images.get(used).id
        except (ImageNotFound, APIError):
            pass
    _tar, sha = context_tar(task_path / "environment", text + image_ids)
    tag = f"{TASK_IMAGE_REPO}:{sha[:20]}"
    image, built = _get_or_build(client, tag, task_path / "environment", text, dockerfile, timeout=timeout)
    workdir = (image.attrs.get("Config") or {}).get("WorkingDir") or "/app"
    return TaskImage(tag=tag, workdir=workdir, built=built, from_images=mapping)


def _get_or_build(client: Any, tag: str, context: Path, text: str, dockerfile: Path, *, timeout: float,
                  buildargs: dict[str, str] | None = None, label: str = "openforge.task-image") -> tuple[Any, bool]:
    """(the image ``tag``, whether it was built now): built from ``context`` with the
    rewritten Dockerfile ``text`` when missing; a failure is one ImageBuildError line."""
    from docker.errors import APIError, BuildError, ImageNotFound

    try:
        return client.images.get(tag), False
    except ImageNotFound:
        pass
    log.info("building %s from %s", tag, dockerfile)
    # Rewritten Dockerfile text without the id suffix goes into the context.
    tar_bytes, _ = context_tar(context, text)
    try:
        image, _logs = client.images.build(
            fileobj=io.BytesIO(tar_bytes), custom_context=True, dockerfile=BUILD_DOCKERFILE, tag=tag,
            network_mode="host", rm=True, forcerm=True, labels={label: "1"}, timeout=int(timeout),
            **({"buildargs": buildargs} if buildargs else {}),
        )
    except BuildError as exc:
        last = next((str(x.get("error") or x.get("stream", "")).strip() for x in reversed(list(exc.build_log or []))
                     if x.get("error") or x.get("stream")), str(exc))
        raise ImageBuildError(f"{dockerfile}: build failed: {last[:400]}") from exc
    except APIError as exc:
        raise ImageBuildError(f"{dockerfile}: build failed: {exc.explanation or exc}") from exc
    return image, True


SIDECAR_IMAGE_REPO = "openforge-sidecar"


def build_sidecar_image(client: Any, context: Path, dockerfile: str, *, base: str, aliases: dict[str, str],
                        buildargs: dict[str, str] | None = None, timeout: float = 600.0) -> tuple[str, dict[str, str]]:
    """(tag, FROM mapping) of a compose sidecar's ``build`` (``context`` dir, its ``dockerfile``,
    ``args``): FROM lines aliased as for task images, cached by content. Blocking."""
    from docker.errors import APIError, ImageNotFound

    def exists(ref: str) -> bool:
        try:
            client.images.get(ref)
            return True
        except (ImageNotFound, APIError):
            return False

    path = context / dockerfile
    text, mapping = rewrite_froms(path.read_text(encoding="utf-8"),
                                  lambda ref: resolve_from(ref, exists=exists, aliases=aliases, base=base))
    missing = unbuilt_local_image(mapping, exists)
    if missing:
        raise ImageBuildError(f"{path}: {missing}")
    args = "".join(f"{k}={v}\0" for k, v in sorted((buildargs or {}).items()))
    _tar, sha = context_tar(context, text + args)
    tag = f"{SIDECAR_IMAGE_REPO}:{sha[:20]}"
    _get_or_build(client, tag, context, text, path, timeout=timeout, buildargs=buildargs, label="openforge.sidecar-image")
    return tag, mapping


# ---- pushing to a registry (the kubernetes backend's pods pull from there) ---------------


class ImagePushError(RuntimeError):
    """A task image could not be pushed; the message names the image and the registry's answer."""


def remote_ref(tag: str, registry: str) -> str:
    """``openforge-task:<hash>`` under ``registry`` (``host[:port]``): ``host:port/openforge-task:<hash>``."""
    return f"{registry.rstrip('/')}/{tag}"


def push_task_image(client: Any, tag: str, registry: str, *, as_tag: str | None = None) -> str:
    """Tag the local image ``tag`` (``repo:version``) under ``registry`` (as ``as_tag`` when
    given, e.g. :func:`content_tag`) and push it with the Docker SDK; returns the remote
    reference. Blocking. Raises ImagePushError (one line)."""
    from docker.errors import APIError, DockerException, ImageNotFound

    remote = remote_ref(as_tag or tag, registry)
    repo, _, version = remote.rpartition(":")
    if not repo or "/" in version:
        raise ImagePushError(f"push {tag}: expected a repo:tag image name")
    try:
        client.images.get(tag).tag(repo, tag=version)
        for line in client.api.push(repo, tag=version, stream=True, decode=True):
            if isinstance(line, dict) and (line.get("error") or line.get("errorDetail")):
                detail = line.get("error") or (line.get("errorDetail") or {}).get("message", "")
                raise ImagePushError(f"push {remote}: {str(detail).strip().splitlines()[0][:300]}")
    except ImageNotFound as exc:
        raise ImagePushError(f"push {remote}: no local image {tag}") from exc
    except APIError as exc:
        raise ImagePushError(f"push {remote}: {str(exc.explanation or exc).splitlines()[0][:300]}") from exc
    except DockerException as exc:
        raise ImagePushError(f"push {remote}: {str(exc).splitlines()[0][:300]}") from exc
    log.info("pushed %s", remote)
    return remote
