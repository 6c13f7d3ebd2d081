"""Work claiming and status transitions on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from sqlalchemy import select

from storage.claims import IllegalTransition, claim_candidates, claim_next, release, transition_task
from storage.db import session_scope
from storage.models import Candidate, Task, TaskStatus


def _add_tasks(engine, n: int, status: TaskStatus = TaskStatus.built) -> list[str]:
    ids = [f"t{i:05d}" for i in range(n)]
    with session_scope(engine) as s:
        s.add_all(Task(id=i, dir=f"/tmp/{i}", status=status.value, domain="claw") for i in ids)
    return ids


def test_claim_returns_each_row_once_then_none(engine) -> None:
    ids = _add_tasks(engine, 3)
    got = [claim_next(engine, "test", "w1") for _ in range(4)]
    assert sorted(got[:3]) == ids
    assert got[3] is None


def test_concurrent_claims_never_double_claim(engine) -> None:
    n_rows, n_workers = 120, 16
    _add_tasks(engine, n_rows)
    claimed: list[tuple[str, str]] = []
    lock = threading.Lock()

    def work(worker: str) -> None:
        while (task_id := claim_next(engine, "test", worker)) is not None:
            with lock:
                claimed.append((task_id, worker))
            transition_task(engine, task_id, TaskStatus.testing, worker=worker)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = Counter(task_id for task_id, _ in claimed)
    assert len(counts) == n_rows
    assert max(counts.values()) == 1
    with session_scope(engine) as s:
        statuses = Counter(s.scalars(select(Task.status)))
    assert statuses == {"testing": n_rows}


def test_expired_lease_is_retaken(engine) -> None:
    (task_id,) = _add_tasks(engine, 1)
    assert claim_next(engine, "test", "crashed", lease_seconds=0.2) == task_id
    assert claim_next(engine, "test", "other", lease_seconds=0.2) is None
    time.sleep(0.3)
    assert claim_next(engine, "test", "other", lease_seconds=0.2) == task_id
    with pytest.raises(IllegalTransition, match="claimed by 'other'"):
        transition_task(engine, task_id, TaskStatus.testing, worker="crashed")
    transition_task(engine, task_id, TaskStatus.testing, worker="other")


def test_illegal_transition_refused_and_nothing_changes(engine) -> None:
    (task_id,) = _add_tasks(engine, 1, TaskStatus.building)
    with pytest.raises(IllegalTransition, match="cannot move building -> verified"):
        transition_task(engine, task_id, TaskStatus.verified, error="should not be written")
    with session_scope(engine) as s:
        row = s.get(Task, task_id)
        assert (row.status, row.error) == ("building", None)
    transition_task(engine, task_id, TaskStatus.built, content_sha="abc")
    with session_scope(engine) as s:
        assert s.get(Task, task_id).content_sha == "abc"
    with pytest.raises(IllegalTransition, match="no such task"):
        transition_task(engine, "missing", TaskStatus.built)


def test_release_gives_the_claim_back(engine) -> None:
    (task_id,) = _add_tasks(engine, 1)
    assert claim_next(engine, "test", "w1") == task_id
    assert release(engine, task_id, "w2") is False
    assert release(engine, task_id, "w1") is True
    assert claim_next(engine, "test", "w2") == task_id


def test_claim_candidates_batches_without_overlap(engine) -> None:
    with session_scope(engine) as s:
        s.add_all(
            Candidate(domain="claw", instruction=f"do {i}", instruction_sha=f"{i:064d}", status="selected")
            for i in range(10)
        )
    first = claim_candidates(engine, "a", limit=4)
    second = claim_candidates(engine, "b", limit=10)
    assert len(first) == 4 and len(second) == 6
    assert not set(first) & set(second)
