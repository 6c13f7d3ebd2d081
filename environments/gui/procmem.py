"""Memory of a process tree from /proc (for the GUI sandbox probes of bench/gui.py)."""

from __future__ import annotations

import os
from pathlib import Path


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_memory_mb(root: int) -> tuple[float, float]:
    """(summed RSS, summed PSS) in MiB of ``root``'s process tree (``smaps_rollup``)."""
    rss = pss = 0
    for pid in process_tree(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return rss / 1024, pss / 1024
