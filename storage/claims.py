"""Atomic work claiming and status transitions.

Workers claim one row with a single ``UPDATE ... WHERE id = (SELECT ... LIMIT 1)`` so that
any number of parallel workers never double-claim. A claim is a lease: a crashed worker's
claim expires after ``lease_seconds`` and the row is claimable again. Status transitions
refuse moves the state machine does not allow and, when a worker is named, moves of rows
that worker does not hold.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, and_, or_, select, update
from sqlalchemy.orm import Session

from storage.db import session_scope
from storage.models import Candidate, CandidateStatus, Task, TaskStatus

DEFAULT_LEASE_SECONDS = 600.0

#: Which task status each stage works on.
STAGE_INPUT_STATUS: dict[str, TaskStatus] = {
    "build": TaskStatus.building,
    "test": TaskStatus.built,
    "refine": TaskStatus.refining,
}

#: Legal task status moves.
TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.building: frozenset({TaskStatus.built, TaskStatus.rejected}),
    TaskStatus.built: frozenset({TaskStatus.testing, TaskStatus.verified, TaskStatus.rejected}),
    TaskStatus.testing: frozenset(
        {TaskStatus.verified, TaskStatus.refining, TaskStatus.rejected, TaskStatus.built}
    ),
    TaskStatus.refining: frozenset({TaskStatus.built, TaskStatus.testing, TaskStatus.rejected}),
    TaskStatus.verified: frozenset({TaskStatus.refining, TaskStatus.rejected}),
    TaskStatus.rejected: frozenset({TaskStatus.building}),
    TaskStatus.imported: frozenset({TaskStatus.verified, TaskStatus.rejected}),
}

CANDIDATE_TRANSITIONS: dict[CandidateStatus, frozenset[CandidateStatus]] = {
    CandidateStatus.proposed: frozenset(
        {CandidateStatus.selected, CandidateStatus.discarded, CandidateStatus.duplicate}
    ),
    CandidateStatus.selected: frozenset({CandidateStatus.discarded}),
    CandidateStatus.discarded: frozenset({CandidateStatus.proposed}),
    CandidateStatus.duplicate: frozenset({CandidateStatus.proposed}),
}


class IllegalTransition(ValueError):
    """A status move the state machine forbids, or of a row the worker does not hold."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _claimable(model, status: str, expiry: datetime):  # noqa: ANN001, ANN202
    return and_(
        model.status == status,
        or_(model.claimed_by.is_(None), model.claimed_at < expiry),
    )


def claim_next(
    engine: Engine,
    stage: str,
    worker: str,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    domain: str | None = None,
) -> str | None:
    """Claim the oldest unclaimed task waiting for ``stage``; returns its id or ``None``."""
    status = STAGE_INPUT_STATUS[stage].value
    now = _now()
    expiry = now - timedelta(seconds=lease_seconds)
    cond = _claimable(Task, status, expiry)
    if domain is not None:
        cond = and_(cond, Task.domain == domain)
    pick = select(Task.id).where(cond).order_by(Task.created_at, Task.id).limit(1)
    if engine.dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    stmt = (
        update(Task)
        .where(Task.id == pick.scalar_subquery(), cond)
        .values(claimed_by=worker, claimed_at=now, attempts=Task.attempts + 1)
        .returning(Task.id)
        .execution_options(synchronize_session=False)
    )
    with session_scope(engine) as session:
        return session.execute(stmt).scalar_one_or_none()


def claim_candidates(
    engine: Engine,
    worker: str,
    *,
    status: CandidateStatus = CandidateStatus.selected,
    limit: int = 1,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    domain: str | None = None,
) -> list[int]:
    """Claim up to ``limit`` candidates in ``status`` (one transaction).

    The pick locks its rows (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's
    ``BEGIN IMMEDIATE`` holds the write lock) and the UPDATE re-checks the condition. The
    pick is a separate statement on purpose: PostgreSQL may re-run a ``LIMIT ... SKIP LOCKED``
    subquery inside ``IN (...)`` and so claim more than ``limit`` rows.
    """
    now = _now()
    expiry = now - timedelta(seconds=lease_seconds)
    cond = _claimable(Candidate, status.value, expiry)
    if domain is not None:
        cond = and_(cond, Candidate.domain == domain)
    pick = select(Candidate.id).where(cond).order_by(Candidate.id).limit(limit)
    if engine.dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    with session_scope(engine) as session:
        ids = list(session.scalars(pick))
        if not ids:
            return []
        stmt = (
            update(Candidate)
            .where(Candidate.id.in_(ids), cond)
            .values(claimed_by=worker, claimed_at=now)
            .returning(Candidate.id)
            .execution_options(synchronize_session=False)
        )
        return sorted(session.execute(stmt).scalars().all())


def release(engine: Engine, task_id: str, worker: str) -> bool:
    """Give a claim back without changing status (e.g. on Ctrl-C)."""
    with session_scope(engine) as session:
        res = session.execute(
            update(Task)
            .where(Task.id == task_id, Task.claimed_by == worker)
            .values(claimed_by=None, claimed_at=None)
        )
        return res.rowcount == 1


def transition_task(
    session_or_engine: Session | Engine,
    task_id: str,
    to: TaskStatus | str,
    *,
    worker: str | None = None,
    keep_claim: bool = False,
    **values: object,
) -> None:
    """Move a task to ``to`` if the state machine allows it (and ``worker`` holds it).

    One conditional UPDATE: either the row moves and the other ``values`` are written, or
    :class:`IllegalTransition` is raised and nothing changes.
    """
    to = TaskStatus(to)
    sources = [s.value for s, targets in TASK_TRANSITIONS.items() if to in targets]
    cond = [Task.id == task_id, Task.status.in_(sources)]
    if worker is not None:
        cond.append(Task.claimed_by == worker)
    new_values: dict[str, object] = {"status": to.value, "updated_at": _now(), **values}
    if not keep_claim:
        new_values.update(claimed_by=None, claimed_at=None)
    stmt = update(Task).where(*cond).values(**new_values).execution_options(synchronize_session=False)

    def _apply(session: Session) -> None:
        if session.execute(stmt).rowcount == 1:
            return
        current = session.execute(select(Task.status, Task.claimed_by).where(Task.id == task_id)).first()
        if current is None:
            raise IllegalTransition(f"task {task_id!r}: no such task")
        if current.status not in sources:
            raise IllegalTransition(f"task {task_id!r}: cannot move {current.status} -> {to.value}")
        raise IllegalTransition(f"task {task_id!r}: claimed by {current.claimed_by!r}, not {worker!r}")

    if isinstance(session_or_engine, Session):
        _apply(session_or_engine)
    else:
        with session_scope(session_or_engine) as session:
            _apply(session)


def transition_candidate(
    session: Session, candidate_id: int, to: CandidateStatus | str, **values: object
) -> None:
    """Move a candidate to ``to`` if allowed; raises :class:`IllegalTransition` otherwise."""
    to = CandidateStatus(to)
    sources = [s.value for s, targets in CANDIDATE_TRANSITIONS.items() if to in targets]
    res = session.execute(
        update(Candidate)
        .where(Candidate.id == candidate_id, Candidate.status.in_(sources))
        .values(status=to.value, claimed_by=None, claimed_at=None, **values)
        .execution_options(synchronize_session=False)
    )
    if res.rowcount != 1:
        current = session.get(Candidate, candidate_id)
        state = "no such candidate" if current is None else f"cannot move {current.status} -> {to.value}"
        raise IllegalTransition(f"candidate {candidate_id}: {state}")
