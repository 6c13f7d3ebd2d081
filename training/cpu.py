"""How many cores this process may run on (its CPU affinity, not the machine's count)."""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores in this process's CPU affinity mask (a container's or ``taskset``'s limit), at
    least one; ``os.cpu_count()`` where the platform has no affinity call."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
