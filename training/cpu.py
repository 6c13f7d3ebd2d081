"""How many cores this process may run on (its CPU affinity, not the machine's count), and
how its CPU-bound workers share them (:class:`CoreClaim`)."""

from __future__ import annotations

import os
import threading
from typing import ClassVar


def available_cores() -> int:
    """Cores in this process's CPU affinity mask (a container's or ``taskset``'s limit), at
    least one; ``os.cpu_count()`` where the platform has no affinity call."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class CoreClaim:
    """The cores one CPU-bound worker of this process is using right now (an engine's forward
    thread while it serves, a trainer's step), announced so that the others size their own
    torch thread counts to what is left instead of oversubscribing the machine.

    Why: the main job runs an evaluation's engine beside SFT or GRPO. On 2 cores a trainer
    on 2 threads beside an engine on 1 keeps 3 spinning threads on 2 cores: every parallel
    region of the trainer waits for the thread the engine preempted, and the evaluation's
    rollouts crawl towards their wall-clock timeout.
    """

    _lock = threading.Lock()
    _held: ClassVar[dict[int, int]] = {}

    def hold(self, cores: int) -> None:
        with self._lock:
            self._held[id(self)] = max(0, cores)

    def release(self) -> None:
        with self._lock:
            self._held.pop(id(self), None)

    def left(self) -> int:
        """Cores the process may use that no other claim holds, at least one."""
        with self._lock:
            others = sum(n for key, n in self._held.items() if key != id(self))
        return max(1, available_cores() - others)

    def __del__(self) -> None:  # a dropped worker gives its cores back
        self.release()
