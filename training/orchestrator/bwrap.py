"""Build a bubblewrap command line for one sandbox (local backend, fake kubelet).

Deny by default (``sandbox_fs``): the sandbox's root is bubblewrap's empty tmpfs with the
host's read-only system dirs (``/usr``, ``/lib*``, ``/bin``, ``/sbin``, ``/etc`` with its
secrets covered, a few ``/var`` caches), our runtime (interpreter prefix, venv, tools dir,
the checkout's ``environments/`` and ``openforge/`` packages with their task dirs hidden),
its own ``/proc``, ``/dev``, ``/tmp``, ``/run``, ``/var/tmp``, the Harbor paths bound at their
absolute locations (``/task`` ro, WORKDIR, ``/logs``, ``/tests``, ``/solution``), COPY
targets of the task's Dockerfile, and a loopback-only network (``--unshare-all``) unless it
must share the host's. No home dir, data dir, checkout or other rollout is ever bound. A
mount point that does not exist under a bound read-only dir is made by "expanding" its
nearest existing ancestor: a tmpfs with the host children bound back one by one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: A dir with more entries than this is not expanded (the mount is reported as unhonoured).
MAX_EXPAND_ENTRIES = 4000


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@dataclass
class Mount:
    src: Path
    dest: str
    writable: bool = False


@dataclass
class BwrapPlan:
    """Mounts of one sandbox, in order, and what could not be placed."""

    mounts: list[Mount] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # host paths covered by an empty tmpfs
    dirs: list[str] = field(default_factory=list)  # empty dirs to create (on tmpfs)
    share_net: bool = False
    unhonoured: list[str] = field(default_factory=list)
    #: uid and gid inside the user namespace (None: root there). It maps to the caller's own
    #: uid outside, so the sandbox reads and writes exactly what it could as root inside.
    uid: int | None = None
    #: Size caps (MiB) of the sandbox's own tmpfs /tmp and /var/tmp (None: the kernel's default).
    tmp_size_mb: int | None = None


def _deepest_existing(dest: PurePosixPath) -> Path:
    p = Path(dest)
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def build_argv(plan: BwrapPlan, *, chdir: str, command: list[str]) -> list[str]:
    """The full ``bwrap ... -- command`` argv for ``plan``."""
    from training.orchestrator.runtime import SANDBOX_HOSTNAME

    exe = bwrap_path() or "bwrap"
    argv = [exe, "--unshare-all"]
    if plan.share_net:
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", SANDBOX_HOSTNAME]
    if plan.uid is not None:
        argv += ["--uid", str(plan.uid), "--gid", str(plan.uid)]
    from training.orchestrator.sandbox_fs import etc_secrets, runtime_view, system_binds

    bound: list[str] = []  # host dirs visible read-only (mount points under them need expanding)
    for b in system_binds():
        if b.symlink_to is not None:
            argv += ["--symlink", b.symlink_to, b.path]
        else:
            argv += ["--ro-bind", b.path, b.path]
            bound.append(b.path)
    secret_files, secret_dirs = etc_secrets()
    for f in secret_files:
        argv += ["--ro-bind", "/dev/null", f]
    for d in secret_dirs:
        argv += ["--tmpfs", d]
    size = ["--size", str(plan.tmp_size_mb << 20)] if plan.tmp_size_mb else []
    argv += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/tmp", "--tmpfs", "/run", *size, "--tmpfs", "/var/tmp"]
    view = runtime_view()
    for path in view.binds:
        argv += ["--ro-bind", path, path]
        bound.append(path)
    for hidden in view.hidden:
        argv += ["--tmpfs", hidden]

    def visible(path: str) -> bool:
        return any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)

    for hidden in plan.hidden:
        if Path(hidden).exists() and visible(hidden):
            argv += ["--tmpfs", hidden]
    # Which host dirs need expanding so a mount point can be made under them?
    expand: list[Path] = []
    for m in plan.mounts:
        dest = PurePosixPath(m.dest)
        if not visible(str(dest)) or Path(dest).exists():
            continue
        anc = _deepest_existing(dest)
        if anc not in expand:
            expand.append(anc)
    remount: list[str] = []
    for anc in sorted(expand, key=lambda p: len(p.parts)):
        try:
            children = sorted(anc.iterdir())
        except OSError:
            children = []
        if len(children) > MAX_EXPAND_ENTRIES:
            plan.unhonoured.append(f"mount under {anc}: too many entries to expand")
            continue
        argv += ["--tmpfs", str(anc)]
        for child in children:
            if str(child) in secret_files:
                argv += ["--ro-bind", "/dev/null", str(child)]
            elif str(child) in secret_dirs or str(child) in view.hidden:
                argv += ["--tmpfs", str(child)]
            elif child.is_symlink():
                argv += ["--symlink", os.readlink(child), str(child)]
            elif child.exists():
                argv += ["--ro-bind", str(child), str(child)]
        remount.append(str(anc))
    for d in plan.dirs:
        argv += ["--dir", d]
    for m in plan.mounts:
        argv += ["--bind" if m.writable else "--ro-bind", str(m.src), m.dest]
    for r in remount:
        argv += ["--remount-ro", r]
    argv += ["--remount-ro", "/", "--chdir", chdir, "--"]
    return argv + command
