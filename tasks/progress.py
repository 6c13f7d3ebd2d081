"""Progress of running flows and tasks: stage lines, work trackers, Prefect progress artifacts.

Flows call :func:`stage` at each step; a long task opens a :class:`Tracker` (synthesis, the
teacher rollouts, each SFT update, each GRPO step, evaluation rollouts) and moves it on. Every
event goes three ways:

* the run's log (Prefect's run logger inside a run, so a worker's log and the UI show it; a
  tracker logs at most every :data:`LOG_EVERY_S` seconds, and always when it completes);
* inside a Prefect run, a progress artifact (``create_progress_artifact`` /
  ``update_progress_artifact``, key ``<tracker key>-progress``) the UI shows as a bar;
* the process-wide reporter, which the CLI installs when it runs a flow in-process
  (``cli/progress.py``: a bar on a terminal, plain lines otherwise); nobody installs one in a
  deployment run.

Progress never fails the work it reports on: an artifact the API refuses is logged and dropped.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

log = logging.getLogger("openforge.progress")

#: Least seconds between two log lines (and two artifact updates) of one tracker.
LOG_EVERY_S = 30.0
ARTIFACT_EVERY_S = 2.0


@dataclass(frozen=True)
class ProgressEvent:
    """One step forward. ``kind`` ``stage``: step ``done`` + 1 of ``total`` of a flow began (named
    ``name``); ``work``: ``done`` of ``total`` units (``unit``) of a tracker keyed ``key``."""

    kind: str
    key: str
    name: str
    done: float
    total: float | None
    unit: str = ""
    note: str = ""

    @property
    def finished(self) -> bool:
        return self.kind == "work" and self.total is not None and self.done >= self.total


Reporter = Callable[[ProgressEvent], None]
_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> None:
    """Install (or, with ``None``, remove) the process-wide reporter."""
    global _reporter  # noqa: PLW0603 - one process-wide hook
    _reporter = reporter


def _report(event: ProgressEvent) -> None:
    if _reporter is not None:
        try:
            _reporter(event)
        except Exception:  # noqa: BLE001 - a display must never fail the work
            log.debug("progress reporter failed", exc_info=True)


def _in_run() -> bool:
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def _logger() -> Any:
    if _in_run():
        from prefect import get_run_logger

        return get_run_logger()
    return log


def stage(name: str, index: int, total: int) -> None:
    """Step ``index`` (1-based) of ``total`` of a flow begins."""
    _logger().info("stage %d/%d: %s", index, total, name)
    _report(ProgressEvent("stage", "stage", name, index - 1, total))


def artifact_key(key: str) -> str:
    """Prefect artifact keys: lower-case letters, digits and dashes."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", key.lower())).strip("-") + "-progress"


class Tracker:
    """``done`` of ``total`` units of one long piece of work (thread-safe: SFT reports from the
    task runner's thread, rollouts from the event loop)."""

    def __init__(self, key: str, name: str, total: float | None, unit: str = "") -> None:
        self.key, self.name, self.total, self.unit = key, name, total, unit
        self.done = 0.0
        self._lock = threading.Lock()
        self._artifact: UUID | None = None
        self._artifact_at = self._logged_at = 0.0
        self._artifact_failed = False
        self._emit("", force=True)

    def update(self, done: float, *, total: float | None = None, note: str = "") -> None:
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
        self._emit(note)

    def advance(self, n: float = 1, *, note: str = "") -> None:
        with self._lock:
            self.done += n
        self._emit(note)

    @property
    def percent(self) -> float:
        return 0.0 if not self.total else max(0.0, min(100.0, 100.0 * self.done / self.total))

    def _emit(self, note: str, *, force: bool = False) -> None:
        event = ProgressEvent("work", self.key, self.name, self.done, self.total, self.unit, note)
        now = time.monotonic()
        if force or event.finished or now - self._logged_at >= LOG_EVERY_S:
            self._logged_at = now
            of = f"/{self.total:g}" if self.total is not None else ""
            _logger().info("%s: %g%s %s%s", self.name, self.done, of, self.unit, f" ({note})" if note else "")
        if force or event.finished or now - self._artifact_at >= ARTIFACT_EVERY_S:
            self._artifact_at = now
            self._publish()
        _report(event)

    def _publish(self) -> None:
        if self._artifact_failed or not _in_run():
            return
        from prefect.artifacts import create_progress_artifact, update_progress_artifact

        try:
            if self._artifact is None:
                self._artifact = create_progress_artifact(self.percent, key=artifact_key(self.key),
                                                          description=self.name, _sync=True)
            else:
                update_progress_artifact(self._artifact, self.percent, _sync=True)
        except Exception as exc:  # noqa: BLE001 - progress must never fail the work
            self._artifact_failed = True
            log.warning("progress artifact %s not published: %s", self.key, exc)


def track(key: str, name: str, total: float | None, unit: str = "") -> Tracker:
    """A new :class:`Tracker` (publishes 0 % at once)."""
    return Tracker(key, name, total, unit)
