"""Build a bubblewrap command line for one sandbox (local backend).

The sandbox sees the host's system dirs read-only (``/usr``, ``/etc``, ``/opt``, the
Python runtime and our package), its own ``/proc``, ``/dev``, ``/tmp``, ``/run``, the
Harbor paths bound at their absolute locations (``/task`` ro, WORKDIR, ``/logs``,
``/tests``, ``/solution``), COPY targets of the task's Dockerfile, and a loopback-only
network (``--unshare-all``) unless it must share the host's. OpenForge's data dir and the
original task dir are hidden behind empty tmpfs mounts (the agent must not read the
task's tests from the bank). A mount point that does not exist under a read-only host dir
is made by "expanding" its nearest existing ancestor: a tmpfs with the host children bound
back one by one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: Host top-level entries never bound into a sandbox.
SKIP_TOP = {"proc", "dev", "sys", "tmp", "run", "boot", "lost+found", "media", "mnt"}
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


def _top_entries() -> list[Path]:
    return [Path("/") / n for n in sorted(os.listdir("/")) if n not in SKIP_TOP]


def _deepest_existing(dest: PurePosixPath) -> Path:
    p = Path(dest)
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _runtime_paths_under_tmpfs() -> list[str]:
    """Runtime paths (see ``runtime.runtime_paths``) under the sandbox's fresh /tmp or /run."""
    from training.orchestrator.runtime import runtime_paths

    return [p for p in runtime_paths() if Path(p).parts[1:2] in (("tmp",), ("run",))]


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
    top_bound: set[str] = set()
    for entry in _top_entries():
        if entry.is_symlink():
            argv += ["--symlink", os.readlink(entry), str(entry)]
        else:
            argv += ["--ro-bind", str(entry), str(entry)]
            top_bound.add(str(entry))
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    # Our own runtime (venv, interpreter, this checkout, harness tools) may live under /tmp
    # or /run, which the fresh tmpfs mounts above just covered: bind it back, read-only.
    for path in _runtime_paths_under_tmpfs():
        argv += ["--ro-bind", path, path]
    for hidden in plan.hidden:
        if Path(hidden).exists():
            argv += ["--tmpfs", hidden]
    # Which host dirs need expanding so a mount point can be made under them?
    expand: list[Path] = []
    for m in plan.mounts:
        dest = PurePosixPath(m.dest)
        top = "/" + dest.parts[1] if len(dest.parts) > 1 else "/"
        if top not in top_bound or Path(dest).exists():
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
            if child.is_symlink():
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
