"""What a sandbox may see of the host: a deny-by-default allow-list (issue 14).

Two parts, used by every backend that binds host paths (local bubblewrap, the docker
backend's runtime binds, the fake kubelet):

- :func:`system_binds` — the host's read-only runtime dirs (``/usr``, ``/lib*``, ``/bin``,
  ``/sbin``, ``/etc``, a few ``/var`` caches GUI apps read), and :data:`ETC_SECRETS`, the
  files and dirs under ``/etc`` covered by ``/dev/null`` / an empty tmpfs. Note that under
  an unprivileged user namespace the agent *owns* every file of the user running the
  orchestrator, so "read-only" is not "unreadable": whatever is bound can be read.
- :func:`runtime_view` — our own runtime: the interpreter prefix, the virtualenv, the
  harness tools dir, and of this checkout only the packages the runner imports
  (``environments/``, ``openforge/``) and the two files run by path (``sandbox_init.py``,
  ``kubernetes/pod_entry.py``) — never the checkout itself,
  its data dir, ``tests/``, ``synthesis/`` or ``bench/``. Task dirs inside those packages
  (any dir holding a ``task.toml``, e.g. the claw examples with their ``solution/`` and
  ``tests/``) are hidden behind empty tmpfs mounts.

Never bound: home directories (the interpreter prefix may live under one, e.g. pyenv's
``~/.pyenv/versions/X``; only that prefix is bound), ``/root``, ``/home``, ``/opt`` (but the
tools dir), ``/srv``, ``/mnt``, ``/work``, the data dir, other rollouts.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: System dirs bound read-only when they exist (symlinks such as ``/bin -> usr/bin`` are
#: recreated as symlinks).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Read-only caches/data under /var that GUI apps and fonts read.
VAR_DIRS = ("/var/cache/fontconfig", "/var/lib/xkb", "/var/lib/dbus", "/var/lib/libreoffice", "/var/lib/ucf")
#: Secrets under /etc: files become /dev/null, dirs an empty tmpfs.
ETC_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd", "/etc/krb5.keytab", "/etc/docker",
    "/etc/postgresql", "/etc/postgresql-common", "/etc/credstore", "/etc/credstore.encrypted",
    "/etc/machine-id", "/etc/openforge", "/etc/kubernetes", "/etc/rancher", "/etc/containerd",
    "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ppp", "/etc/.pwd.lock",
)
#: Top-level packages of this checkout the runner, harnesses, services and oracles import.
RUNTIME_PACKAGES = ("environments", "openforge")
#: Files of the checkout run by path inside sandboxes (stdlib only): the relay init, the pod entry.
RUNTIME_FILES = ("training/orchestrator/sandbox_init.py", "training/orchestrator/kubernetes/pod_entry.py")


@dataclass(frozen=True)
class HostBind:
    """One host path bound read-only at the same place (or a symlink to recreate)."""

    path: str
    symlink_to: str | None = None


@dataclass(frozen=True)
class RuntimeView:
    """Our runtime as a sandbox sees it: read-only binds, then tmpfs-hidden task dirs."""

    binds: tuple[str, ...]
    hidden: tuple[str, ...]
    repo_root: str


def system_binds() -> list[HostBind]:
    out: list[HostBind] = []
    for p in (*SYSTEM_DIRS, *VAR_DIRS):
        path = Path(p)
        if path.is_symlink():
            out.append(HostBind(p, symlink_to=os.readlink(path)))
        elif path.is_dir():
            out.append(HostBind(p))
    return out


def etc_secrets() -> tuple[list[str], list[str]]:
    """(files, dirs) of :data:`ETC_SECRETS` present on this host."""
    files = [p for p in ETC_SECRETS if os.path.isfile(p) or os.path.islink(p)]
    dirs = [p for p in ETC_SECRETS if os.path.isdir(p) and not os.path.islink(p)]
    return files, dirs


def _outermost(paths: list[Path]) -> list[Path]:
    kept: list[Path] = []
    for p in sorted(set(paths), key=lambda q: len(q.parts)):
        if not any(k == p or k in p.parents for k in kept):
            kept.append(p)
    return kept


def _task_dirs(root: Path) -> list[str]:
    """Dirs under ``root`` that are task dirs (hold a task.toml), outermost only."""
    found: list[Path] = []
    for dirpath, dnames, fnames in os.walk(root):
        dnames[:] = [d for d in dnames if d not in ("__pycache__", ".git", "node_modules")]
        if "task.toml" in fnames:
            found.append(Path(dirpath))
            dnames[:] = []
    return [str(p) for p in _outermost(found)]


def _system_covered(p: Path) -> bool:
    return any(p == Path(s) or Path(s) in p.parents for s in SYSTEM_DIRS if not Path(s).is_symlink())


@lru_cache(maxsize=4)
def _view(repo_root: str, prefix: str, base_prefix: str, tools: str) -> RuntimeView:
    repo = Path(repo_root)
    paths = [Path(base_prefix).resolve(), Path(prefix)]
    if Path(tools).is_dir():
        paths.append(Path(tools))
    pkgs = [repo / name for name in RUNTIME_PACKAGES if (repo / name).is_dir()]
    binds = [p for p in _outermost(paths) if not _system_covered(p)]
    # The checkout's packages: unless an outer bind already covers them (the venv never
    # holds the checkout; a checkout *inside* the prefix would be odd but is handled).
    for extra in [*pkgs, *(repo / f for f in RUNTIME_FILES)]:
        if extra.exists() and not any(b == extra or b in extra.parents for b in binds):
            binds.append(extra)
    hidden: list[str] = []
    for pkg in pkgs:
        hidden += _task_dirs(pkg)
    return RuntimeView(binds=tuple(str(b) for b in binds), hidden=tuple(hidden), repo_root=str(repo))


def runtime_view() -> RuntimeView:
    """The runtime binds for this process (cached per interpreter, checkout and tools dir)."""
    from environments.harnesses.binaries import tools_dir
    from training.orchestrator import runtime

    return _view(str(runtime.REPO_ROOT), sys.prefix, sys.base_prefix, str(tools_dir()))
