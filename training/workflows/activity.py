"""Busy time of the engine and the trainer, for the per-step idle metrics (issue 17).

:class:`Activity` records busy intervals (closed ones and those still open) and answers
"how long was it busy in [lo, hi]" as the length of their union. :class:`TimedEngine`
wraps a :class:`~training.engines.base.ChatEngine` so that every call through the proxy is
an interval: the engine counts as busy while at least one call is in flight (queueing in
its batcher included), idle otherwise.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from training.engines.base import EngineWrapper


def union_seconds(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``intervals`` clipped to [lo, hi]."""
    spans = sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi)
    total, cur_a, cur_b = 0.0, 0.0, None
    for a, b in spans:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


class Activity:
    """Busy intervals on the ``time.perf_counter`` clock."""

    def __init__(self) -> None:
        self.closed: list[tuple[float, float]] = []
        self._open: dict[int, float] = {}
        self._ids = itertools.count()

    def begin(self) -> int:
        key = next(self._ids)
        self._open[key] = time.perf_counter()
        return key

    def end(self, key: int) -> None:
        start = self._open.pop(key, None)
        if start is not None:
            self.closed.append((start, time.perf_counter()))

    def busy(self, lo: float, hi: float) -> float:
        """Seconds in [lo, hi] with at least one interval open."""
        return union_seconds(self.closed + [(a, hi) for a in self._open.values()], lo, hi)

    def forget_before(self, t: float) -> None:
        """Drop closed intervals that ended before ``t`` (keeps the list short in long runs)."""
        self.closed = [(a, b) for a, b in self.closed if b >= t]


class TimedEngine(EngineWrapper):
    """A ChatEngine whose calls are recorded in ``activity``; everything else is delegated."""

    def __init__(self, engine: Any, activity: Activity | None = None) -> None:
        super().__init__(engine)
        self.activity = activity or Activity()

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        key = self.activity.begin()
        try:
            return await self._engine.chat_completions(body)
        finally:
            self.activity.end(key)
