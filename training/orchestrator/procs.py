"""Find and kill every process of a sandbox, however it detached.

Each sandbox's processes carry ``OPENFORGE_SANDBOX_ID=<rollout_id>`` in their environment;
a process that started its own session or double-forked is still found through /proc.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

log = logging.getLogger(__name__)

SANDBOX_ENV = "OPENFORGE_SANDBOX_ID"


def _environ_has(pid: int, needle: bytes) -> bool:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except (OSError, PermissionError):
        return False
    return needle in data.split(b"\0")


def sandbox_pids(rollout_id: str) -> list[int]:
    """Live pids whose environment marks them as part of sandbox ``rollout_id``."""
    needle = f"{SANDBOX_ENV}={rollout_id}".encode()
    me = os.getpid()
    pids: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid != me and _environ_has(pid, needle):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                pids.append(pid)
    return pids


def all_sandbox_ids() -> set[str]:
    """Rollout ids of every live sandboxed process on this host (leak check)."""
    prefix = f"{SANDBOX_ENV}=".encode()
    ids: set[str] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry.name}/environ").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":
            continue
        for item in data.split(b"\0"):
            if item.startswith(prefix):
                ids.add(item[len(prefix):].decode(errors="replace"))
    return ids


def kill_tree(pgid: int | None, rollout_id: str) -> None:
    """SIGKILL the process group ``pgid`` and every process marked with ``rollout_id``."""
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in sandbox_pids(rollout_id):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
