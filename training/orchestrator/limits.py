"""Resource limits of a local sandbox: memory (no swap), CPU, pids (issue 14).

Where the host offers them, one cgroup per rollout, entered by the sandbox's first process
(a ``/bin/sh`` wrapper) before it execs bubblewrap (so every process of the sandbox is in it):

- **cgroup v2**: a child of this process's own cgroup when that cgroup delegates the
  ``memory`` and ``pids`` controllers (``cgroup.subtree_control``); ``memory.max``,
  ``memory.swap.max = 0``, ``pids.max``, ``cpu.max``; OOM kills counted from
  ``memory.events``; ``cgroup.kill`` at cleanup.
- **cgroup v1** (hybrid hosts such as this CI's): a child of this process's cgroup in the
  ``memory``, ``pids`` and ``cpu`` hierarchies; ``memory.limit_in_bytes`` (+
  ``memsw`` when swap accounting is on), ``pids.max``, ``cpu.cfs_quota_us``; OOM kills from
  ``memory.oom_control``; every pid in ``cgroup.procs`` SIGKILLed at cleanup.
- **fallback** (no writable cgroup, e.g. not root and no delegation): a watchdog polls the
  summed RSS and the process count of the sandbox's marked processes every
  :data:`POLL_S` and kills the sandbox (reported as ``oom``) when RSS passes the limit;
  pids over the limit are killed the same way; CPU is not limited. Stated in the handle's
  notes as ``limits: watchdog``.

``storage_mb`` is not a cgroup matter: :class:`DiskWatch` polls the rollout's writable host
dirs (workspace, logs, files) and kills the sandbox past the limit (``storage_exceeded``);
the sandbox's tmpfs ``/tmp`` and ``/var/tmp`` are capped at ``storage_mb`` by bubblewrap
(tmpfs pages also count as the cgroup's memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
POLL_S = 0.5
DISK_POLL_S = 1.0
#: Default pids limit of a sandbox (task.toml has no field for it).
DEFAULT_PIDS = 1024
_V1_CONTROLLERS = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class Limits:
    memory_mb: int
    cpus: float
    pids: int = DEFAULT_PIDS


def _own_paths() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path."""
    out: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
    except (OSError, ValueError):
        pass
    return out


def detect_mode() -> str:
    """``v2``, ``v1`` or ``watchdog`` for this host and this process."""
    own = _own_paths()
    v2 = CGROUP_ROOT / own.get("", "/").lstrip("/")
    try:
        delegated = set((v2 / "cgroup.subtree_control").read_text().split())
        if {"memory", "pids"} <= delegated and os.access(v2, os.W_OK):
            return "v2"
    except OSError:
        pass
    if all((CGROUP_ROOT / c / own.get(c, "/").lstrip("/")).is_dir() for c in _V1_CONTROLLERS) and all(
            os.access(CGROUP_ROOT / c / own.get(c, "/").lstrip("/"), os.W_OK) for c in _V1_CONTROLLERS):
        return "v1"
    return "watchdog"


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError as exc:
        log.debug("cgroup write %s=%s failed: %s", path, value, exc)
        return False


@dataclass
class SandboxCgroup:
    """The cgroup(s) of one sandbox; :meth:`wrap` puts a command into them."""

    name: str
    mode: str
    dirs: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls, name: str, limits: Limits, mode: str) -> SandboxCgroup:
        cg = cls(name=name, mode=mode)
        own = _own_paths()
        mem = limits.memory_mb << 20
        if mode == "v2":
            d = CGROUP_ROOT / own.get("", "/").lstrip("/") / name
            d.mkdir()
            cg.dirs = [d]
            _write(d / "memory.max", str(mem))
            _write(d / "memory.swap.max", "0")
            _write(d / "pids.max", str(limits.pids))
            _write(d / "cpu.max", f"{int(limits.cpus * 100_000)} 100000")
        elif mode == "v1":
            for c in _V1_CONTROLLERS:
                d = CGROUP_ROOT / c / own.get(c, "/").lstrip("/") / name
                d.mkdir()
                cg.dirs.append(d)
            m, p, c = cg.dirs
            _write(m / "memory.limit_in_bytes", str(mem))
            if (m / "memory.memsw.limit_in_bytes").exists():
                _write(m / "memory.memsw.limit_in_bytes", str(mem))
            _write(m / "memory.swappiness", "0")
            _write(p / "pids.max", str(limits.pids))
            _write(c / "cpu.cfs_period_us", "100000")
            _write(c / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * 100_000))))
        return cg

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` behind a ``/bin/sh`` that moves itself into every hierarchy, then execs it
        (no ``preexec_fn``: that would make Python fork instead of vfork its large process)."""
        if not self.dirs:
            return argv
        moves = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)
        return ["/bin/sh", "-c", f'{moves} && exec "$@" || exit 126', "sandbox-cgroup", *argv]

    def oom_kills(self) -> int:
        try:
            if self.mode == "v2":
                text = (self.dirs[0] / "memory.events").read_text()
            elif self.mode == "v1":
                text = (self.dirs[0] / "memory.oom_control").read_text()
            else:
                return 0
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, val = line.partition(" ")
            if key == "oom_kill":
                return int(val)
        if self.mode == "v1":  # old kernels: no oom_kill line; failcnt > 0 means the limit was hit
            with contextlib.suppress(OSError, ValueError):
                return int((self.dirs[0] / "memory.failcnt").read_text()) and 1
        return 0

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
        return sorted(out)

    def kill(self) -> None:
        if self.mode == "v2" and self.dirs and _write(self.dirs[0] / "cgroup.kill", "1"):
            return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still has processes (dying): retry shortly
                    import time

                    time.sleep(0.02)
                    self.kill()


def _rss_and_count(pids: list[int]) -> tuple[int, int]:
    rss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) << 10
                    break
        except (OSError, ValueError, IndexError):
            continue
    return rss, len(pids)


def dir_bytes(paths: list[Path]) -> int:
    """Allocated bytes under ``paths`` (st_blocks; hard links counted once; no symlinks followed)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(p) for p in paths if p.exists()]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for e in it:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                    total += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return total


class Watchdog:
    """Polls a sandbox and calls ``on_exceeded(kind, detail)`` once when a limit is passed.

    ``disk``: host dirs summed against ``storage_mb``; ``pids_fn``: the sandbox's processes,
    checked against memory/pids when the cgroup fallback is in use."""

    def __init__(self, *, storage_mb: int | None, disk: list[Path], limits: Limits | None,
                 pids_fn: Callable[[], list[int]] | None, on_exceeded: Callable[[str, str], None]) -> None:
        self.storage_mb, self.disk, self.limits, self.pids_fn = storage_mb, disk, limits, pids_fn
        self.on_exceeded = on_exceeded
        self.tripped: tuple[str, str] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="openforge-sandbox-watchdog")

    async def _run(self) -> None:
        last_disk = 0.0
        loop = asyncio.get_running_loop()
        while self.tripped is None:
            await asyncio.sleep(POLL_S if self.pids_fn else DISK_POLL_S)
            if self.pids_fn is not None and self.limits is not None:
                rss, n = await asyncio.to_thread(lambda: _rss_and_count(self.pids_fn()))
                if rss > self.limits.memory_mb << 20:
                    self._trip("oom", f"sandbox RSS {rss >> 20} MiB over memory_mb={self.limits.memory_mb}")
                elif n > self.limits.pids:
                    self._trip("oom", f"sandbox has {n} processes, over the pids limit {self.limits.pids}")
            if self.storage_mb and self.tripped is None and loop.time() - last_disk >= DISK_POLL_S:
                last_disk = loop.time()
                used = await asyncio.to_thread(dir_bytes, self.disk)
                if used > self.storage_mb << 20:
                    self._trip("storage_exceeded", f"sandbox wrote {used >> 20} MiB, over storage_mb={self.storage_mb}")

    def _trip(self, kind: str, detail: str) -> None:
        self.tripped = (kind, detail)
        log.warning("sandbox limit: %s", detail)
        self.on_exceeded(kind, detail)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
