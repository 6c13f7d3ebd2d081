"""The agent jail: where the harness runs, so the runner can empty it before any of the
verifier's files exist (issue 14, "a verifier phase the agent cannot reach").

- ``userns`` (local bubblewrap, the fake kubelet): a nested bubblewrap — new user and PID
  namespace — over the sandbox's own root, with a fresh ``/dev``, ``/tmp``, ``/run``,
  ``/var/tmp`` and ``HOME``, and the sandbox's ``/proc`` bound read-only (a new procfs
  cannot be mounted under bubblewrap's covered one; the outer pids are listed there but
  cannot be signalled from the jail's PID namespace, nor their ``environ``/``mem``/``fd``
  opened: the jail's user namespace has no ptrace rights over the sandbox's), and the tests dir and ``<logs>/verifier`` covered by
  throwaway tmpfs mounts. Everything the agent starts (``setsid`` daemons included) lives in
  that PID namespace: when the jail's bwrap dies, its init dies and the kernel kills the
  rest. :meth:`Jail.empty` then checks that no process of another PID namespace is left
  (SIGKILLing stragglers) before the runner says ``agent_done``.
- ``uid`` (docker; only for a runner that is a container's root — ``kill(-1)`` as the agent
  uid reaches every process of that uid in the PID namespace): the runner is root in the container with ``CAP_SETUID``/``SETGID``/
  ``KILL``; the harness runs as ``agent_uid`` with no capabilities. :meth:`Jail.empty` has a
  child of that uid ``kill(-1, SIGKILL)`` (one atomic sweep: a fork bomb cannot outrun it),
  checks that no process of the uid is left, and deletes what the uid left in ``/tmp``,
  ``/var/tmp``, ``/dev/shm``. Tests and ``<logs>/verifier`` stay root's.
- ``none`` (the plain-process fallback; a pod that can do neither): the harness's process
  group only. Reported as ``agent_jail = "none"``: nothing keeps a daemon from the verifier.

``auto`` (the Kubernetes backend) picks ``userns`` when a nested bubblewrap starts here, else
``none``; the local backend asks for ``userns``, docker for ``uid``; the runner's default is
``none`` (run by hand, outside any sandbox).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

JAIL_KINDS = ("auto", "userns", "uid", "none")
JAIL_ENV = "OPENFORGE_JAIL_ID"
#: How long :meth:`Jail.empty` waits for the agent's processes to be gone.
EMPTY_TIMEOUT_S = 5.0
#: Where the agent uid may leave files the verifier could trip over (uid jail).
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
_CAP_SETUID = 7


class JailError(RuntimeError):
    """The agent's processes could not be confined or removed (infra_error/start_failed)."""


def _own_pid_ns() -> str:
    return os.readlink("/proc/self/ns/pid")


def _pids() -> list[int]:
    return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _has_cap(bit: int) -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError):
        pass
    return False


def _uid_of(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def userns_available(bwrap: str | None = None) -> bool:
    """Can a nested bubblewrap (user + PID namespace) start here?"""
    exe = bwrap or shutil.which("bwrap")
    if not exe:
        return False
    try:
        proc = subprocess.run([exe, "--unshare-user", "--unshare-pid", "--die-with-parent", "--bind", "/", "/",
                               "--ro-bind", "/proc", "/proc", "--", "true"], capture_output=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@dataclass
class Jail:
    """One rollout's agent jail (see the module doc)."""

    kind: str
    agent_uid: int | None = None
    #: The harness's gid in a ``uid`` jail (None: ``agent_uid``; a task's ``[agent] user``
    #: brings its own group).
    agent_gid: int | None = None
    #: Sandbox paths the agent must not see (tests dir, verifier logs): tmpfs in ``userns``.
    hidden: list[Path] = field(default_factory=list)
    bwrap: str | None = None
    #: Size cap (MiB) of the jail's own tmpfs /tmp, /run, /var/tmp (the task's storage_mb):
    #: tmpfs pages are memory, and the watchdog fallback only sees RSS.
    tmp_size_mb: int | None = None
    marker: str = field(default_factory=lambda: secrets.token_hex(8))

    # -- spawning -----------------------------------------------------------------------
    def wrap(self, argv: list[str], *, home: Path, env_home: str | None) -> list[str]:
        """``argv`` as run inside the jail (``userns``: behind a nested bwrap)."""
        if self.kind != "userns":
            return argv
        size = ["--size", str(self.tmp_size_mb << 20)] if self.tmp_size_mb else []
        jail = [self.bwrap or "bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent", "--new-session",
                "--bind", "/", "/", "--ro-bind", "/proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/tmp",
                *size, "--tmpfs", "/run", *size, "--tmpfs", "/var/tmp", "--bind", str(home), str(home)]
        if env_home and env_home != str(home) and env_home.startswith(("/tmp/", "/run/", "/var/tmp/")):
            jail += ["--dir", env_home]
        for path in _runtime_under_scratch():  # a venv / checkout under /tmp stays reachable (read-only)
            jail += ["--ro-bind", path, path]
        for path in self.hidden:
            if path.is_dir():
                jail += ["--tmpfs", str(path)]
        return [*jail, "--", *argv]

    @property
    def user(self) -> int | None:
        """The uid the harness is started as (``uid`` jail), else None (the runner's own)."""
        return self.agent_uid if self.kind == "uid" else None

    @property
    def group(self) -> int | None:
        """The gid the harness is started as (``uid`` jail), else None."""
        if self.kind != "uid":
            return None
        return self.agent_gid if self.agent_gid is not None else self.agent_uid

    def hand_over(self, paths: list[Path]) -> None:
        """Make ``paths`` (recursively) the agent's (``uid`` jail)."""
        if self.kind != "uid" or self.agent_uid is None:
            return
        for path in paths:
            if not path.exists():
                continue
            chown_tree(path, self.agent_uid, self.group if self.group is not None else self.agent_uid)

    # -- emptying -----------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """Marker the harness's processes inherit (``userns``): how :meth:`leftovers` tells the
        jail's processes from other PID namespaces' (containers, other sandboxes) when the
        runner is not itself in a sandbox of its own. A process that drops it still dies with
        the jail's init: the kernel empties a PID namespace whose init is gone."""
        return {JAIL_ENV: self.marker} if self.kind == "userns" else {}

    def leftovers(self) -> list[int]:
        """Pids of the agent still alive."""
        if self.kind == "userns":
            own, needle = _own_pid_ns(), f"{JAIL_ENV}={self.marker}".encode()
            out = []
            for pid in _pids():
                try:
                    if os.readlink(f"/proc/{pid}/ns/pid") == own or not _alive(pid):
                        continue
                    if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                        out.append(pid)
                except OSError:
                    continue
            return out
        if self.kind == "uid" and self.agent_uid is not None:
            return [p for p in _pids() if _uid_of(p) == self.agent_uid and _alive(p)]
        return []

    def _sweep_uid(self) -> None:
        assert self.agent_uid is not None
        code = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
        subprocess.run([sys.executable, "-S", "-c", code], user=self.agent_uid, group=self.group,
                       extra_groups=[], env={}, timeout=10, check=False)

    def _remove_scratch(self) -> None:
        assert self.agent_uid is not None
        for top in SCRATCH_DIRS:
            try:
                entries = list(os.scandir(top))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_uid != self.agent_uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                except OSError:
                    continue

    def empty_sync(self, timeout: float = EMPTY_TIMEOUT_S) -> int:
        """Kill every process the agent left; returns how many were found. Raises
        :class:`JailError` when some survive ``timeout``."""
        if self.kind in ("none", "auto"):
            return 0
        if self.kind == "uid":
            self._sweep_uid()
        found = 0
        deadline = time.monotonic() + timeout
        while left := self.leftovers():
            found = max(found, len(left))
            if time.monotonic() > deadline:
                raise JailError(f"{len(left)} agent process(es) survived the end of the agent phase: {left[:10]}")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if self.kind == "uid":
                self._sweep_uid()
            time.sleep(0.02)
        if self.kind == "uid":
            self._remove_scratch()
        return found

    async def empty(self, timeout: float = EMPTY_TIMEOUT_S) -> int:
        return await asyncio.to_thread(self.empty_sync, timeout)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """``path`` and everything under it (symlinks themselves, not their targets) to uid:gid."""
    os.chown(path, uid, gid)
    for root, dnames, fnames in os.walk(path):
        for name in dnames + fnames:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def choose_jail(requested: str, *, agent_uid: int | None, hidden: list[Path], tmp_size_mb: int | None = None) -> Jail:
    """The jail for ``requested`` (one of :data:`JAIL_KINDS`); raises :class:`JailError`
    when an explicit kind cannot work here."""
    bwrap = shutil.which("bwrap")
    if requested == "auto":
        requested = "userns" if userns_available(bwrap) else "none"
        if requested == "none":
            log.warning("agent jail: no nested bubblewrap here; the agent's processes are not confined")
    if requested == "userns" and not bwrap:
        raise JailError("agent jail 'userns' needs bwrap inside the sandbox")
    if requested == "uid":
        if os.geteuid() != 0 or not _has_cap(_CAP_SETUID):
            raise JailError("agent jail 'uid' needs the runner to be root with CAP_SETUID")
        if not agent_uid:
            raise JailError("agent jail 'uid' needs a nonzero --agent-uid")
    return Jail(kind=requested, agent_uid=agent_uid, hidden=hidden, bwrap=bwrap, tmp_size_mb=tmp_size_mb)


def _runtime_under_scratch() -> list[str]:
    """Our runtime's paths (interpreter prefixes, the package checkout, the harness tools)
    that lie under a dir the jail replaces with a fresh tmpfs (a clone in /tmp, say)."""
    import sys  # noqa: PLC0415

    candidates = {sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[2]),
                  os.environ.get("OPENFORGE_TOOLS_DIR", "")}
    scratch = ("/tmp/", "/run/", "/var/tmp/")
    return sorted(p for p in candidates if p and p.startswith(scratch) and os.path.exists(p))
