"""How long the engine has been answering one rollout: the wall time during which at least
one of its model calls was in the engine (the union of the calls' intervals, not their sum,
so concurrent calls cannot inflate it beyond the time that passed).

The runner's agent timeout and the scheduler's rollout timeout leave this time out
(``GET /rollouts/<token>/engine-time``, ``GET /admin/rollouts/<id>``): a task's time budget is
for the harness and its environment; generation is bounded by the rollout's token budget
(budget.py). Otherwise the same policy scores differently on a loaded engine (a shared CPU,
a busy GPU server) than on an idle one: a timed-out agent is scored on the workspace it left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class EngineClock:
    in_flight: int = 0
    _since: float | None = None  # when the engine last went from 0 to 1 call in flight
    _done: float = 0.0  # closed busy intervals, seconds

    def call_started(self) -> None:
        if self.in_flight == 0:
            self._since = time.monotonic()
        self.in_flight += 1

    def call_ended(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        if self.in_flight == 0 and self._since is not None:
            self._done += time.monotonic() - self._since
            self._since = None

    def seconds(self) -> float:
        """Busy seconds so far, the open interval of calls still in the engine included."""
        open_part = time.monotonic() - self._since if self._since is not None else 0.0
        return self._done + open_part

    def snapshot(self) -> dict[str, float | int]:
        """What the ``engine-time`` endpoints answer."""
        return {"engine_seconds": self.seconds(), "in_flight": self.in_flight}
