"""Helpers the stages share: check rows, per-task accounting, stage statistics."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, select, update

from storage.db import session_scope
from storage.models import Candidate, Check, Task


@dataclass
class StageStats:
    """What one stage did in one call: items handled, seconds, dollars, attempts."""

    stage: str
    count: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0
    attempts: int = 0
    notes: list[str] = field(default_factory=list)


class Timer:
    def __init__(self) -> None:
        self.start = time.monotonic()

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.start


def add_check(engine: Engine, task_id: str, kind: str, *, passed: bool, reward: float | None = None,
              seconds: float = 0.0, detail: dict[str, Any] | None = None, log_path: str | None = None,
              rollout_id: str | None = None) -> None:
    with session_scope(engine) as session:
        session.add(Check(task_id=task_id, kind=kind, passed=passed, reward=reward, seconds=seconds,
                          detail=detail or {}, log_path=log_path, rollout_id=rollout_id))


def checks_for(engine: Engine, task_id: str, content_sha: str | None = None) -> list[Check]:
    """Checks of a task (only those made on ``content_sha`` when given), oldest first."""
    with session_scope(engine) as session:
        rows = session.execute(select(Check).where(Check.task_id == task_id).order_by(Check.id)).scalars().all()
    if content_sha is None:
        return list(rows)
    return [c for c in rows if (c.detail or {}).get("content_sha") == content_sha]


def add_task_cost(engine: Engine, task_id: str, *, cost_usd: float = 0.0, seconds: float = 0.0) -> None:
    with session_scope(engine) as session:
        session.execute(update(Task).where(Task.id == task_id).values(
            cost_usd=Task.cost_usd + cost_usd, seconds=Task.seconds + seconds))


def load_task_row(engine: Engine, task_id: str) -> tuple[Task, Candidate | None]:
    with session_scope(engine) as session:
        task = session.get(Task, task_id)
        if task is None:
            raise KeyError(f"task {task_id!r}: no such task")
        cand = session.get(Candidate, task.candidate_id) if task.candidate_id is not None else None
        return task, cand
