"""The kubernetes backend's runtime image: ``/opt/openforge`` (``python/``, ``repo/``,
``tools/``) that a rollout pod's ``runtime`` initContainer copies into an emptyDir.

Built with the Docker SDK from this checkout — no Dockerfile on disk: the build context is a
tar holding the final tree at ``opt/openforge/`` and a two-line Dockerfile (``FROM <base>``,
``COPY opt/ /opt/``; the base only has to provide ``sh`` and ``cp`` for the initContainer).

- ``python/``: this interpreter's prefix (``sys.base_prefix``; its own ``site-packages``,
  ``test/`` and caches left out) with the venv's ``site-packages`` in its place, so plain
  ``python/bin/python3`` imports our dependencies. A ``--enable-shared`` build (pyenv's)
  carries an absolute RUNPATH to its old prefix, so ``bin/python3`` becomes a ``sh`` wrapper
  that puts ``python/lib`` on ``LD_LIBRARY_PATH`` (inherited by the runner's children).
- ``repo/``: the files git lists in this checkout (tracked + untracked, not ignored).
- ``tools/``: the harness tools dir (``OPENFORGE_TOOLS_DIR``), unless ``tools=False``.

``slim=True`` keeps only the distributions the in-sandbox runner imports (runner, harness
adapters, react loop; the GUI harnesses with Pillow and Playwright when installed) and what they
require, transitively (``Requires-Dist`` without extras).

Limits: the interpreter is this host's build: the task image must provide a compatible glibc
and the shared libraries its extension modules link (libssl3, libffi8, libsqlite3, zlib, ...;
any Debian bookworm-like image does; musl images do not).

CLI: ``python -m training.orchestrator.runtime_image [--tag T] [--slim] [--no-tools]
[--push REGISTRY] [--dry-run]`` (``scripts/build-runtime-image.sh``) prints one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.harnesses.registry import ADAPTER_MODULES
from training.orchestrator.runtime import REPO_ROOT

RUNTIME_DIR = "/opt/openforge"
RUNTIME_REPO = "openforge-runtime"
#: Runner-side modules whose imports decide what a slim runtime keeps: the runner, every
#: harness adapter (the registry imports only the one asked for), the react loop, the claw
#: services' ASGI stack (served in the runner's process) and httpx (what the runner loaded
#: before it spoke stdlib HTTP, kept for verifiers such as the LLM judge).
RUNNER_MODULES = ("environments.runner.__main__", "environments.harnesses.registry",
                  *(f"environments.harnesses.adapters.{m}" for m in ADAPTER_MODULES),
                  "environments.harnesses.react.loop", "environments.claw.app", "uvicorn", "httpx")
#: The GUI harnesses and what they import only when they run (Pillow's X grab, Playwright):
#: kept when installed (the ``gui`` extra), so a slim runtime serves GUI rollouts too.
GUI_MODULES = ("environments.harnesses.computer_use.loop", "environments.harnesses.browser_use.loop",
               "PIL.ImageGrab", "playwright.async_api")
_SKIP_NAMES = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


class RuntimeImageError(RuntimeError):
    """The runtime image could not be built or pushed; one line saying why."""


@dataclass
class RuntimePlan:
    """What goes where: ``entries`` are (path in the image, host path) for files and symlinks."""

    runtime_dir: str
    python_version: str  # "3.11"
    shared_libpython: bool
    entries: list[tuple[str, Path]] = field(default_factory=list)
    extra: dict[str, bytes] = field(default_factory=dict)  # generated files: path in the image -> content

    @property
    def bytes(self) -> int:
        return sum(p.lstat().st_size for _d, p in self.entries) + sum(len(b) for b in self.extra.values())


def _walk(root: Path, skip: tuple[Path, ...] = ()) -> Iterator[Path]:
    """Files and symlinks under ``root`` (symlinked dirs not followed), ``skip`` subtrees left out."""
    stack = [root]
    while stack:
        d = stack.pop()
        for child in sorted(d.iterdir(), reverse=True):
            if child.name in _SKIP_NAMES or child in skip:
                continue
            if child.is_dir() and not child.is_symlink():
                stack.append(child)
            else:
                yield child


def _repo_files(repo: Path) -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeImageError(f"git ls-files in {repo}: {exc}") from exc
    return [repo / rel for rel in sorted(set(out.decode().split("\0"))) if rel and (repo / rel).is_file()]


def _runtime_repo_files(repo: Path) -> list[Path]:
    """The checkout's files a pod needs — the deny-by-default runtime view (``sandbox_fs``):
    the runtime packages and the files run by path, without any task dir (example tasks'
    ``solution/`` and ``tests/``), ``tests/``, ``synthesis/`` or the data dir."""
    from training.orchestrator.sandbox_fs import (
        RUNTIME_FILES,
        RUNTIME_PACKAGES,
        _task_dirs,
    )

    hidden = [Path(h) for pkg in RUNTIME_PACKAGES if (repo / pkg).is_dir() for h in _task_dirs(repo / pkg)]
    out = []
    for p in _repo_files(repo):
        rel = p.relative_to(repo).as_posix()
        if rel not in RUNTIME_FILES and rel.split("/", 1)[0] not in RUNTIME_PACKAGES:
            continue
        if any(h == p or h in p.parents for h in hidden):
            continue
        out.append(p)
    return out


def _requirement_names(dist: Any) -> list[str]:
    names = []
    for req in dist.requires or []:
        if "extra ==" in req or "extra==" in req:
            continue
        names.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return names


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def slim_distributions(modules: tuple[str, ...] = RUNNER_MODULES, optional: tuple[str, ...] = GUI_MODULES) -> set[str]:
    """Distributions (normalized names) that importing ``modules`` (and those of ``optional``
    that import) loads, plus their requirements, transitively. Imports run in a child interpreter."""
    from importlib import metadata

    code = ("import importlib, json, sys\n"
            f"for m in {list(modules)!r}: importlib.import_module(m)\n"
            f"for m in {list(optional)!r}:\n"
            "    try:\n        importlib.import_module(m)\n    except ImportError:\n        pass\n"
            "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                             cwd=REPO_ROOT).stdout
    except subprocess.CalledProcessError as exc:
        raise RuntimeImageError(f"importing the runner failed: {exc.stderr.strip().splitlines()[-1:]}") from exc
    top_to_dist = metadata.packages_distributions()
    # our own project's distribution is the repo/ part, not a dependency
    own = {_norm(d) for top, dists in top_to_dist.items() if (REPO_ROOT / top).is_dir() for d in dists}
    todo = [_norm(d) for top in json.loads(out.strip().splitlines()[-1]) for d in top_to_dist.get(top, [])]
    seen: set[str] = set(own)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend(_norm(n) for n in _requirement_names(dist))
    return seen - own


def plan_runtime(*, runtime_dir: str = RUNTIME_DIR, slim: bool = False, tools: bool = True,
                 tools_dir: Path | None = None) -> RuntimePlan:
    """The runtime tree of this checkout (see the module doc); nothing is written."""
    from importlib import metadata

    prefix = Path(sys.base_prefix).resolve()
    pyver = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = Path(sysconfig.get_paths()["purelib"])
    shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
    dest = runtime_dir.strip("/")
    plan = RuntimePlan(runtime_dir=runtime_dir, python_version=pyver, shared_libpython=shared)
    stdlib = prefix / "lib" / f"python{pyver}"
    skip = (stdlib / "site-packages", stdlib / "test", stdlib / "idlelib", stdlib / "tkinter", stdlib / "ensurepip")
    wrapper = prefix / "bin" / "python3"
    for path in _walk(prefix, skip):
        if shared and path == wrapper:
            continue
        plan.entries.append((f"{dest}/python/{path.relative_to(prefix).as_posix()}", path))
    if shared:
        plan.extra[f"{dest}/python/bin/python3"] = (
            "#!/bin/sh\n# libpython lives beside us (the interpreter's RUNPATH names its build prefix)\n"
            'here="$(cd "$(dirname "$0")/.." && pwd)"\n'
            'export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n'
            f'exec "$here/bin/python{pyver}" "$@"\n').encode()
    site_dest = f"{dest}/python/lib/python{pyver}/site-packages"
    if slim:
        files: set[Path] = set()
        for name in sorted(slim_distributions()):
            dist = metadata.distribution(name)
            for rel in dist.files or []:
                path = Path(str(dist.locate_file(rel))).resolve()
                if path.is_file() and site in path.parents and "__pycache__" not in path.parts:
                    files.add(path)
        plan.entries += [(f"{site_dest}/{p.relative_to(site).as_posix()}", p) for p in sorted(files)]
    else:
        plan.entries += [(f"{site_dest}/{p.relative_to(site).as_posix()}", p) for p in _walk(site)]
    plan.entries += [(f"{dest}/repo/{p.relative_to(REPO_ROOT).as_posix()}", p) for p in _runtime_repo_files(REPO_ROOT)]
    if tools:
        from environments.harnesses.binaries import tools_dir as default_tools

        root = tools_dir or default_tools()
        if root.is_dir():
            plan.entries += [(f"{dest}/tools/{p.relative_to(root).as_posix()}", p) for p in _walk(root)]
    return plan


def dockerfile_text(base: str, runtime_dir: str = RUNTIME_DIR) -> str:
    return (f"FROM {base}\n"
            f"COPY {runtime_dir.strip('/').split('/')[0]}/ /{runtime_dir.strip('/').split('/')[0]}/\n"
            'LABEL openforge.runtime="1"\n')


def write_context(plan: RuntimePlan, base: str, out: Any) -> None:
    """The build context (tar) into the binary file ``out``: the tree plus ``Dockerfile``."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        dirs: set[str] = set()
        for arcname, path in plan.entries:
            parts = arcname.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            info = tar.gettarinfo(str(path), arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode |= 0o444 if not info.issym() else 0  # readable by the pod's non-root uid
            if info.isreg():
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
        for arcname, data in {**plan.extra, "Dockerfile": dockerfile_text(base, plan.runtime_dir).encode()}.items():
            info = tarfile.TarInfo(arcname)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True)
class RuntimeBuild:
    tag: str
    files: int
    context_bytes: int
    image_bytes: int
    seconds: float
    pushed: str | None = None


def build_runtime_image(client: Any, tag: str, *, base: str, plan: RuntimePlan, timeout: int = 3600) -> RuntimeBuild:
    """Build ``tag`` from ``plan`` with the Docker SDK (the context is spooled to a temp file). Blocking."""
    from docker.errors import APIError, BuildError

    t0 = time.monotonic()
    with tempfile.TemporaryFile(prefix="openforge-runtime-") as ctx:
        write_context(plan, base, ctx)
        size = ctx.tell()
        ctx.seek(0)
        try:
            image, _logs = client.images.build(fileobj=ctx, custom_context=True, tag=tag, rm=True, forcerm=True,
                                               timeout=timeout)
        except BuildError as exc:
            raise RuntimeImageError(f"runtime image {tag}: build failed: {str(exc).splitlines()[0][:300]}") from exc
        except APIError as exc:
            raise RuntimeImageError(f"runtime image {tag}: {str(exc.explanation or exc).splitlines()[0][:300]}") from exc
    return RuntimeBuild(tag=tag, files=len(plan.entries) + len(plan.extra), context_bytes=size,
                        image_bytes=int(image.attrs.get("Size") or 0), seconds=round(time.monotonic() - t0, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build-runtime-image", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default=f"{RUNTIME_REPO}:latest")
    parser.add_argument("--base", default=None, help="image with sh and cp (default: OPENFORGE_BASE_IMAGE)")
    parser.add_argument("--runtime-dir", default=RUNTIME_DIR)
    parser.add_argument("--slim", action="store_true", help="only the runner's dependencies")
    parser.add_argument("--no-tools", action="store_true", help="leave the harness tools dir out")
    parser.add_argument("--push", metavar="REGISTRY", help="push as REGISTRY/<tag> (OPENFORGE_K8S_RUNTIME_IMAGE)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan's size; build nothing")
    args = parser.parse_args(argv)
    from training.orchestrator.config import get_orchestrator_settings

    base = args.base or get_orchestrator_settings().base_image
    plan = plan_runtime(runtime_dir=args.runtime_dir, slim=args.slim, tools=not args.no_tools)
    doc: dict[str, Any] = {"tag": args.tag, "base": base, "slim": args.slim, "tools": not args.no_tools,
                           "files": len(plan.entries) + len(plan.extra), "tree_bytes": plan.bytes}
    try:
        if not args.dry_run:
            import docker

            from training.orchestrator.images import ImagePushError, push_task_image

            client = docker.from_env(timeout=3600)
            built = build_runtime_image(client, args.tag, base=base, plan=plan)
            doc.update(context_bytes=built.context_bytes, image_bytes=built.image_bytes, build_seconds=built.seconds)
            if args.push:
                try:
                    doc["pushed"] = push_task_image(client, args.tag, args.push)
                except ImagePushError as exc:
                    raise RuntimeImageError(str(exc)) from exc
    except RuntimeImageError as exc:
        print(f"build-runtime-image: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
