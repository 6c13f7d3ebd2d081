"""Showing a flow run's progress (``tasks.progress`` events) on stderr while the CLI runs it.

On a terminal: a rich bar per flow stage and per tracker (synthesis, distillation rollouts, SFT
updates, GRPO steps, evaluation rollouts). Anywhere else (a CI log, ``nohup``, a pipe): plain
lines, ``[   63s] stage 3/5: distill + SFT ...`` at every stage, a tracker's line whenever it
has moved on by :data:`LINE_STEP` of its total or :data:`LINE_EVERY_S` seconds have passed, and
a ``still running`` line after :data:`HEARTBEAT_S` seconds without any, so a long step without
progress of its own (loading a model, one long update) still shows that the job is alive.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tasks import progress as flow_progress
from tasks.progress import ProgressEvent

#: A plain line per tracker when it has moved by this share of its total ...
LINE_STEP = 0.1
#: ... or this many seconds after its previous line.
LINE_EVERY_S = 60.0
#: A ``still running`` line after this many seconds without any line (OPENFORGE_PROGRESS_HEARTBEAT_S).
HEARTBEAT_S = float(os.environ.get("OPENFORGE_PROGRESS_HEARTBEAT_S", "120"))


def _amount(event: ProgressEvent) -> str:
    total = f"/{event.total:g}" if event.total is not None else ""
    return f"{event.done:g}{total}{' ' + event.unit if event.unit else ''}"


class PlainLines:
    """Progress as plain timestamped lines (a non-terminal stderr)."""

    def __init__(self, console: Console, label: str, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.console, self.label, self.heartbeat_s = console, label, heartbeat_s
        self.t0 = time.monotonic()
        self.last_line = self.t0
        self.current = label
        self._shown: dict[str, tuple[float, float]] = {}  # tracker key -> (done, when) of its last line
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="openforge-progress-heartbeat", daemon=True)

    def line(self, text: str) -> None:
        with self._lock:
            now = time.monotonic()
            self.last_line = now
            self.console.print(f"[{now - self.t0:6.0f}s] {text}", markup=False, highlight=False, soft_wrap=True)

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "stage":
            self.current = event.name
            self.line(f"stage {event.done + 1:g}/{event.total:g}: {event.name}")
            return
        now = time.monotonic()
        first = event.key not in self._shown
        done, when = self._shown.get(event.key, (0.0, 0.0))
        step = (event.total or 0) * LINE_STEP
        moved = event.done != done and (event.finished or bool(step and event.done - done >= step))
        if first or moved or now - when >= LINE_EVERY_S:
            self._shown[event.key] = (event.done, now)
            self.current = f"{event.name}: {_amount(event)}"
            self.line(self.current + (f" ({event.note})" if event.note else ""))

    def _beat(self) -> None:
        while not self._stop.wait(min(self.heartbeat_s, 5.0)):
            if time.monotonic() - self.last_line >= self.heartbeat_s:
                self.line(f"still running: {self.current}")

    def __enter__(self) -> PlainLines:
        self.line(f"{self.label}: starting (Prefect flow run)")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class Bars:
    """Progress as rich bars (a terminal)."""

    def __init__(self, console: Console, label: str) -> None:
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[note]}"), console=console)
        self.stage_bar = self.progress.add_task(label, total=None, note="starting Prefect")
        self.bars: dict[str, Any] = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.kind == "stage":
            self.progress.update(self.stage_bar, total=event.total, completed=event.done, description=event.name,
                                 note="")
            return
        if event.key not in self.bars:
            self.bars[event.key] = self.progress.add_task(event.name, total=event.total, note="")
        self.progress.update(self.bars[event.key], completed=event.done, total=event.total, note=event.note[:60])

    def __enter__(self) -> Bars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if not any(exc):
            total = self.progress.tasks[self.stage_bar].total
            self.progress.update(self.stage_bar, completed=total, note="done")
        self.progress.__exit__(*exc)  # type: ignore[arg-type]


@contextlib.contextmanager
def showing_progress(label: str, *, quiet: bool = False, console: Console | None = None) -> Iterator[None]:
    """Inside, the process-wide ``tasks.progress`` reporter draws on stderr: bars on a terminal
    (none when ``quiet``, e.g. ``--json``), plain lines anywhere else (even when ``quiet``: a
    log wants them)."""
    console = console or Console(stderr=True)
    if console.is_terminal and quiet:
        yield
        return
    view: Bars | PlainLines = Bars(console, label) if console.is_terminal else PlainLines(console, label)
    with view:
        flow_progress.set_reporter(view)
        try:
            yield
        finally:
            flow_progress.set_reporter(None)
