"""Synthesis's reads and writes of the task DB: candidates, runs, the agent-call ledger.

Everything here is idempotent: candidates are inserted with ``ON CONFLICT DO NOTHING`` on
the unique (domain, instruction_sha), tasks with a deterministic id, and completed agent
calls are written to the run's ledger (``runs.summary["calls"]``) before the caller moves
on, so a re-run after a crash never repeats a paid call that already succeeded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Engine, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from storage.claims import transition_task
from storage.db import session_scope
from storage.models import Candidate, CandidateStatus, Run, Task, TaskStatus

log = logging.getLogger(__name__)

RUN_KIND = "synthesize"


def instruction_sha(text: str) -> str:
    """Hash of an instruction, insensitive to case and whitespace runs."""
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()


def worker_id(index: int = 0) -> str:
    """``host:pid:index`` — lets a later run tell whether a claim's holder is still alive."""
    return f"{socket.gethostname()}:{os.getpid()}:{index}"


def _insert(engine: Engine, model):  # noqa: ANN001, ANN202
    return pg_insert(model) if engine.dialect.name == "postgresql" else sqlite_insert(model)


def add_candidate(
    engine: Engine,
    *,
    run_id: str,
    domain: str,
    instruction: str,
    category: str | None = None,
    params: dict[str, Any] | None = None,
    asset_refs: list[Any] | None = None,
    proposer: str | None = None,
    purpose: str = "rl",
    cost_usd: float = 0.0,
    seconds: float = 0.0,
) -> int | None:
    """Append a proposal; returns its id, or None if the exact instruction already exists."""
    text = instruction.strip()
    if not text:
        raise ValueError("candidate instruction: empty")
    stmt = (
        _insert(engine, Candidate)
        .values(
            run_id=run_id, domain=domain, category=category, instruction=text,
            instruction_sha=instruction_sha(text), params=params or {}, asset_refs=asset_refs or [],
            proposer=proposer, purpose=purpose, status=CandidateStatus.proposed.value,
            cost_usd=cost_usd, seconds=seconds, created_at=datetime.now(timezone.utc),
        )
        .on_conflict_do_nothing(index_elements=["domain", "instruction_sha"])
        .returning(Candidate.id)
    )
    with session_scope(engine) as session:
        return session.execute(stmt).scalar_one_or_none()


def count_candidates(engine: Engine, run_id: str, status: CandidateStatus | None = None) -> int:
    q = select(func.count()).select_from(Candidate).where(Candidate.run_id == run_id)
    if status is not None:
        q = q.where(Candidate.status == status.value)
    with session_scope(engine) as session:
        return int(session.execute(q).scalar_one())


def task_counts(engine: Engine, run_id: str) -> dict[str, int]:
    """Tasks of a run by status."""
    with session_scope(engine) as session:
        rows = session.execute(
            select(Task.status, func.count()).where(Task.synth_run_id == run_id).group_by(Task.status)
        ).all()
    return {status: int(n) for status, n in rows}


# ─────────────────────────────────────────────────────────────── runs and the ledger
def start_or_resume_run(
    engine: Engine, params: dict[str, Any], run_id: str | None = None
) -> tuple[str, bool]:
    """Return (run id, resumed). Without ``run_id``, resume the newest unfinished
    synthesize run with the same domain/backend/purpose, else start a new one."""
    keys = ("domain", "backend", "purpose")
    with session_scope(engine) as session:
        if run_id is not None:
            run = session.get(Run, run_id)
            if run is not None:
                run.status = "running"
                return run.id, True
        else:
            runs = session.execute(
                select(Run).where(Run.kind == RUN_KIND, Run.status != "done").order_by(Run.started_at.desc())
            ).scalars()
            for run in runs:
                if all(run.params.get(k) == params.get(k) for k in keys):
                    run.status = "running"
                    return run.id, True
        new_id = run_id or f"synth-{uuid.uuid4().hex[:10]}"
        seed = params.get("seed")
        if seed is None:
            seed = int(new_id.encode().hex(), 16) % (2**31)
        session.add(Run(id=new_id, kind=RUN_KIND, params={**params, "seed": seed}, status="running",
                        summary={"stages": {}, "calls": {}}))
        return new_id, False


def run_params(engine: Engine, run_id: str) -> dict[str, Any]:
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise KeyError(f"run {run_id!r}: no such run")
        return dict(run.params)


def _locked_run(session: Session, run_id: str) -> Run:
    q = select(Run).where(Run.id == run_id)
    if session.get_bind().dialect.name == "postgresql":
        q = q.with_for_update()
    run = session.execute(q).scalar_one()
    return run


def record_stage(engine: Engine, run_id: str, stage: str, *, count: int = 0, seconds: float = 0.0,
                 cost_usd: float = 0.0, attempts: int = 0) -> None:
    """Add to the run's per-stage totals (runs.summary["stages"][stage]) and its cost."""
    with session_scope(engine) as session:
        run = _locked_run(session, run_id)
        summary = dict(run.summary or {})
        stages = dict(summary.get("stages", {}))
        cur = dict(stages.get(stage, {"count": 0, "seconds": 0.0, "cost_usd": 0.0, "attempts": 0}))
        cur["count"] += count
        cur["seconds"] = round(cur["seconds"] + seconds, 4)
        cur["cost_usd"] = round(cur["cost_usd"] + cost_usd, 6)
        cur["attempts"] = cur.get("attempts", 0) + attempts
        stages[stage] = cur
        summary["stages"] = stages
        run.summary = summary
        run.cost_usd = (run.cost_usd or 0.0) + cost_usd


def ledger_get(engine: Engine, run_id: str, key: str) -> dict[str, Any] | None:
    """The recorded outcome of agent call ``key`` in this run, if it completed."""
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        return None if run is None else (run.summary or {}).get("calls", {}).get(key)


def ledger_put(engine: Engine, run_id: str, key: str, entry: dict[str, Any]) -> None:
    """Record that agent call ``key`` completed (cost, seconds, ok, ...)."""
    with session_scope(engine) as session:
        run = _locked_run(session, run_id)
        summary = dict(run.summary or {})
        calls = dict(summary.get("calls", {}))
        calls[key] = entry
        summary["calls"] = calls
        run.summary = summary


def finish_run(engine: Engine, run_id: str, status: str, extra: dict[str, Any] | None = None) -> None:
    with session_scope(engine) as session:
        run = _locked_run(session, run_id)
        run.status = status
        run.finished_at = datetime.now(timezone.utc)
        if extra:
            run.summary = {**(run.summary or {}), **extra}


# ───────────────────────────────────────────────────────────────── crash recovery
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_dead_claims(engine: Engine) -> int:
    """Free claims held by workers of this host whose process is gone; a task caught in
    ``testing`` goes back to ``built`` so the test stage picks it up again."""
    host = socket.gethostname()
    freed = 0
    with session_scope(engine) as session:
        rows = session.execute(
            select(Task.id, Task.status, Task.claimed_by).where(Task.claimed_by.like(f"{host}:%"))
        ).all()
    for task_id, status, holder in rows:
        try:
            pid = int(holder.split(":")[1])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or _pid_alive(pid):
            continue
        if status == TaskStatus.testing.value:
            transition_task(engine, task_id, TaskStatus.built)
        else:
            with session_scope(engine) as session:
                session.execute(
                    update(Task).where(Task.id == task_id, Task.claimed_by == holder)
                    .values(claimed_by=None, claimed_at=None)
                )
        freed += 1
    if freed:
        log.info("freed %d claims of dead workers", freed)
    return freed
