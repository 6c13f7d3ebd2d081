"""Migrations and the schema's constraints."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from storage.db import make_engine, session_scope
from storage.migrate import current_revision, head_revision, upgrade
from storage.models import Base, Candidate, ModelCall, Rollout


def test_migrations_create_every_table_and_are_idempotent(db_url: str) -> None:
    engine = make_engine(db_url)
    assert current_revision(engine) == head_revision()
    assert upgrade(db_url) == head_revision()
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_exact_duplicate_candidate_rejected(engine) -> None:
    with session_scope(engine) as s:
        s.add(Candidate(domain="claw", instruction="x", instruction_sha="a" * 64))
    with pytest.raises(IntegrityError):
        with session_scope(engine) as s:
            s.add(Candidate(domain="claw", instruction="x", instruction_sha="a" * 64))
    with session_scope(engine) as s:  # same text in another domain is fine
        s.add(Candidate(domain="browser-use", instruction="x", instruction_sha="a" * 64))


def test_model_calls_are_unique_per_index_and_ordered(engine) -> None:
    with session_scope(engine) as s:
        s.add(Rollout(id="r1", harness="react"))
        s.add_all(ModelCall(rollout_id="r1", index=i, api="chat", prompt_token_ids=[1, 2, i]) for i in (1, 0))
    with session_scope(engine) as s:
        calls = s.get(Rollout, "r1").calls
        assert [c.index for c in calls] == [0, 1]
        assert calls[1].prompt_token_ids == [1, 2, 1]
    with pytest.raises(IntegrityError):
        with session_scope(engine) as s:
            s.add(ModelCall(rollout_id="r1", index=0, api="chat"))


def test_sqlite_pragmas(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
    engine.dispose()


def test_a_pooled_connection_always_waits_on_a_locked_db(sqlite_url: str) -> None:
    """The proxy's inline writer sets its connection's busy timeout to 0 (never block the event
    loop); when that connection goes back to the pool, the next user must wait on a lock again,
    not fail at once (it answered admin reads with 500 "database is locked")."""
    engine = make_engine(sqlite_url, pool_size=1)
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        raw.execute("PRAGMA busy_timeout = 0")
    with engine.connect() as again:
        assert again.connection.driver_connection is raw, "the pool handed back the same connection"
        assert again.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
    engine.dispose()
