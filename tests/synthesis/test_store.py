"""Synthesis DB helpers: exact-duplicate rejection, run resume, ledger, dead-claim recovery."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import select

from storage.claims import claim_next
from storage.db import session_scope
from storage.models import Run, Task, TaskStatus
from synthesis.store import (
    add_candidate,
    count_candidates,
    ledger_get,
    ledger_put,
    record_stage,
    recover_dead_claims,
    start_or_resume_run,
    worker_id,
)


def test_exact_duplicates_rejected_case_and_space_insensitive(db_engine) -> None:
    rid, _ = start_or_resume_run(db_engine, {"domain": "claw", "backend": "procedural", "purpose": "rl"})
    first = add_candidate(db_engine, run_id=rid, domain="claw", instruction="Reply to Dana about INV-1.")
    assert first is not None
    assert add_candidate(db_engine, run_id=rid, domain="claw", instruction="  reply to dana   about INV-1. ") is None
    assert add_candidate(db_engine, run_id=rid, domain="other", instruction="Reply to Dana about INV-1.") is not None
    assert count_candidates(db_engine, rid) == 2  # one per domain


def test_unfinished_run_is_resumed_and_ledger_survives(db_engine) -> None:
    params = {"domain": "claw", "backend": "claude", "purpose": "rl"}
    rid, resumed = start_or_resume_run(db_engine, params)
    assert not resumed
    ledger_put(db_engine, rid, "propose:0", {"ok": True, "cost_usd": 0.25})
    record_stage(db_engine, rid, "propose", count=3, seconds=1.5, cost_usd=0.25, attempts=1)
    record_stage(db_engine, rid, "propose", count=1, seconds=0.5, cost_usd=0.05, attempts=1)
    again, resumed = start_or_resume_run(db_engine, params)
    assert (again, resumed) == (rid, True)
    assert ledger_get(db_engine, rid, "propose:0") == {"ok": True, "cost_usd": 0.25}
    assert ledger_get(db_engine, rid, "propose:1") is None
    other, resumed = start_or_resume_run(db_engine, {**params, "backend": "openai"})
    assert other != rid and not resumed
    with session_scope(db_engine) as s:
        run = s.get(Run, rid)
        assert run.summary["stages"]["propose"] == {"count": 4, "seconds": 2.0, "cost_usd": 0.3, "attempts": 2}
        assert abs(run.cost_usd - 0.3) < 1e-9


def test_claims_of_dead_local_workers_are_freed(db_engine) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_worker = worker_id(0).rsplit(":", 2)[0] + f":{int(dead.stdout)}:0"
    with session_scope(db_engine) as s:
        s.add_all([Task(id="a", dir="/x/a", status=TaskStatus.built.value, domain="claw"),
                   Task(id="b", dir="/x/b", status=TaskStatus.building.value, domain="claw"),
                   Task(id="c", dir="/x/c", status=TaskStatus.built.value, domain="claw")])
    assert claim_next(db_engine, "test", dead_worker) == "a"
    with session_scope(db_engine) as s:
        s.get(Task, "a").status = TaskStatus.testing.value
    assert claim_next(db_engine, "build", dead_worker) == "b"
    assert claim_next(db_engine, "test", worker_id(0)) == "c"  # alive: this process
    assert recover_dead_claims(db_engine) == 2
    with session_scope(db_engine) as s:
        rows = {t.id: (t.status, t.claimed_by) for t in s.execute(select(Task)).scalars()}
    assert rows["a"] == (TaskStatus.built.value, None)
    assert rows["b"] == (TaskStatus.building.value, None)
    assert rows["c"] == (TaskStatus.built.value, worker_id(0))
