"""Engine and session factory from a URL.

SQLite (the embedded default) runs in WAL mode with a busy timeout and foreign keys, and
every transaction starts with ``BEGIN IMMEDIATE``: the driver's default deferred
transactions let two writers read the same row and silently lose one update
(FEASIBILITY.md measured 966 of 1000 lost). PostgreSQL needs none of this.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 60_000


class DatabaseURLError(ValueError):
    """The DB URL cannot become an engine: unparsable, an unknown dialect, or its driver is not installed."""


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # noqa: ANN001
        # Hand transaction control to SQLAlchemy's "begin" hook below.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn, _record, _proxy) -> None:  # noqa: ANN001
        # Every connection leaves the pool waiting on a locked DB: a user that lowered its busy
        # timeout (the proxy's inline writer sets 0 so as never to block its event loop) must not
        # hand the next user a connection that fails at once ("database is locked": a 500 on a read).
        dbapi_conn.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # noqa: ANN001
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str, *, echo: bool = False, pool_size: int | None = None) -> Engine:
    """Create an engine for ``url``; SQLite files get their parent directory created.

    Raises :class:`DatabaseURLError` (naming the URL, password hidden) when the URL does not
    parse, names an unknown dialect or a driver that is not installed; connecting is lazy.
    """
    try:
        return _make_engine(url, echo=echo, pool_size=pool_size)
    except (ArgumentError, ValueError, ImportError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DatabaseURLError(
            f"database URL {hide_password(url)!r}: {reason}; set OPENFORGE_DB to a SQLAlchemy URL such as "
            "postgresql+psycopg://USER:PASSWORD@HOST:5432/DB, or unset it for SQLite under OPENFORGE_HOME") from exc


def hide_password(url: str) -> str:
    """``url`` with any password replaced by ``***`` (also for URLs that do not parse)."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _make_engine(url: str, *, echo: bool, pool_size: int | None) -> Engine:
    parsed = make_url(url)
    kwargs: dict = {"echo": echo, "future": True}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(url, **kwargs)
        _configure_sqlite(engine)
        return engine
    if pool_size is not None:
        kwargs["pool_size"] = pool_size
        kwargs["max_overflow"] = pool_size
    kwargs["pool_pre_ping"] = True
    return create_engine(url, **kwargs)


def SessionFactory(engine: Engine) -> sessionmaker[Session]:  # noqa: N802 - reads like a type
    """A session factory whose objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on error."""
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
