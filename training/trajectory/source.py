"""Read finished rollouts and their recorded calls from the task DB for reconstruction."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, select
from sqlalchemy.orm import selectinload

from storage.calls import expand_calls
from storage.db import session_scope
from storage.models import ModelCall, Rollout


def load_rollouts_with_calls(
    engine: Engine, *, rollout_ids: Sequence[str] | None = None, run_id: str | None = None
) -> list[tuple[Rollout, list[ModelCall]]]:
    """``(Rollout, [ModelCall, ...])`` pairs, selected by ids and/or run, calls in index order.

    The calls are full calls (rows stored against earlier calls are expanded, storage/calls.py),
    as detached ``ModelCall`` objects: changing one writes nothing back.
    """
    stmt = select(Rollout).options(selectinload(Rollout.calls))
    if rollout_ids is not None:
        stmt = stmt.where(Rollout.id.in_(list(rollout_ids)))
    if run_id is not None:
        stmt = stmt.where(Rollout.run_id == run_id)
    with session_scope(engine) as session:
        rows = session.scalars(stmt.order_by(Rollout.created_at, Rollout.id)).all()
        return [(row, [ModelCall(**call) for call in expand_calls(row.calls)]) for row in rows]
