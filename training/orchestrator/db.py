"""The scheduler's writes to the task DB: one ``rollouts`` row per rollout.

The proxy may already have created the row when it registered the rollout (same id);
these functions insert or update it, never duplicate it. Blocking: call via a thread.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from environments.records import RolloutResult, RolloutSpec
from storage.db import session_scope
from storage.models import Rollout, RolloutStatus


def record_started(engine: Engine, spec: RolloutSpec, backend: str) -> None:
    with session_scope(engine) as s:
        row = s.get(Rollout, spec.rollout_id)
        if row is None:
            row = Rollout(id=spec.rollout_id)
            s.add(row)
        row.task_id = spec.task_id or row.task_id
        row.run_id = spec.run_id or row.run_id
        row.role = spec.role or row.role
        row.harness = spec.harness
        row.model = spec.model
        row.group_id = spec.group_id or row.group_id
        row.backend = backend
        row.status = RolloutStatus.running.value


def record_finished(engine: Engine, spec: RolloutSpec, result: RolloutResult, meta: dict[str, Any]) -> None:
    with session_scope(engine) as s:
        row = s.get(Rollout, spec.rollout_id)
        if row is None:
            row = Rollout(id=spec.rollout_id, task_id=spec.task_id, run_id=spec.run_id, role=spec.role,
                          harness=spec.harness, model=spec.model, group_id=spec.group_id)
            s.add(row)
        row.backend = result.backend
        row.status = result.status.value
        row.error_kind = result.error_kind
        row.error = result.error
        row.reward = result.reward
        row.n_calls = max(result.n_calls, row.n_calls or 0)
        row.seconds = result.seconds
        row.timings = dict(result.timings)
        row.meta = {**(row.meta or {}), **meta}
        if result.metrics:
            row.meta = {**row.meta, "metrics": dict(result.metrics)}
        row.logs_path = result.logs_dir
        row.finished_at = datetime.now(UTC)
