"""Storage fixtures: every storage test runs on SQLite and on a real PostgreSQL server.

PostgreSQL comes from ``OPENFORGE_TEST_PG_URL`` (``.ci/run`` starts one with
scripts/start-postgres.sh). When no server is reachable the PostgreSQL cases are skipped
with the reason printed.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text

from storage.db import make_engine
from storage.migrate import upgrade
from storage.models import Base

PG_URL = os.environ.get("OPENFORGE_TEST_PG_URL")


def _pg_reachable() -> str | None:
    if not PG_URL:
        return "OPENFORGE_TEST_PG_URL is not set (run scripts/start-postgres.sh)"
    try:
        engine = make_engine(PG_URL)
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        return f"PostgreSQL at {PG_URL} not reachable: {exc.__class__.__name__}: {str(exc).splitlines()[0]}"
    return None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """A freshly migrated DB URL: SQLite file, or an emptied PostgreSQL database."""
    if request.param == "sqlite":
        upgrade(sqlite_url)
        return sqlite_url
    reason = _pg_reachable()
    if reason:
        print(f"\nSKIP postgres: {reason}")
        pytest.skip(reason)
    engine = make_engine(PG_URL)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(PG_URL, engine)
    engine.dispose()
    return PG_URL


@pytest.fixture
def engine(db_url: str):
    eng = make_engine(db_url, pool_size=40)
    yield eng
    eng.dispose()
