"""Per-step training metrics into the task DB (``runs`` / ``run_metrics`` rows)."""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from storage.db import session_scope
from storage.models import Run, RunMetric

log = logging.getLogger(__name__)


class RunRecorder:
    """Creates (or reuses) one ``Run`` row and appends ``RunMetric`` rows per step."""

    def __init__(self, engine: Engine, run_id: str, *, kind: str = "rl-train", params: dict[str, Any] | None = None) -> None:
        self.engine = engine
        self.run_id = run_id
        with session_scope(engine) as session:
            if session.get(Run, run_id) is None:
                session.add(Run(id=run_id, kind=kind, params=params or {}, status="running"))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        rows = [
            RunMetric(run_id=self.run_id, step=step, name=name, value=float(value))
            for name, value in metrics.items()
            if isinstance(value, int | float) and math.isfinite(float(value))
        ]
        with session_scope(self.engine) as session:
            session.add_all(rows)

    def finish(self, status: str = "completed", summary: dict[str, Any] | None = None) -> None:
        with session_scope(self.engine) as session:
            run = session.get(Run, self.run_id)
            if run is not None:
                run.status = status
                run.summary = {**(run.summary or {}), **(summary or {})}
                run.finished_at = datetime.now(UTC)
