"""SQLite WAL checkpoints off the recorder's commit path.

By default SQLite checkpoints inside the commit that takes the WAL past 1,000 pages: that
commit copies the WAL into the database file and fsyncs both, while every call queued behind
it waits for its acknowledgement. A 100 KB row (a trajectory's first call) cost 2.1 ms to
commit that way against 0.4 ms without it (bench numbers in training/proxy/README.md). So
the writer's connection turns automatic checkpoints off (:func:`no_autocheckpoint`) and
:class:`WalCheckpointer` runs a PASSIVE checkpoint (never waits on readers or writers) from
its own connection in a worker thread, at most every ``interval_s`` and only after writes.
Durability is unchanged: a commit is in the WAL before the caller is answered either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from sqlalchemy import Connection, Engine

log = logging.getLogger(__name__)


def no_autocheckpoint(conn: Connection) -> None:
    """Turn automatic checkpoints off for this connection (SQLite only; a no-op elsewhere)."""
    if conn.dialect.name == "sqlite":  # on the driver's connection: no SQLAlchemy transaction begins
        conn.connection.driver_connection.execute("PRAGMA wal_autocheckpoint = 0")


class WalCheckpointer:
    """Background PASSIVE checkpoints of one SQLite database; :meth:`wrote` after each commit."""

    def __init__(self, engine: Engine, interval_s: float = 0.5, before: Callable[[], None] | None = None) -> None:
        self._engine = engine
        #: Run before each checkpoint, in its thread (the side files' fsync).
        self._before = before
        self.interval_s = interval_s
        self._dirty = asyncio.Event()
        self._task: asyncio.Task | None = None

    def wrote(self) -> None:
        self._dirty.set()

    def start(self) -> None:
        self._dirty = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="openforge-proxy-checkpointer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await asyncio.to_thread(self._checkpoint)  # leave a short WAL behind
        except Exception:  # any later connection checkpoints it
            log.debug("final WAL checkpoint failed", exc_info=True)

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await asyncio.to_thread(self._checkpoint)
            except Exception:  # the next one retries; writers never depend on it
                log.warning("WAL checkpoint failed", exc_info=True)
            await asyncio.sleep(self.interval_s)

    def _checkpoint(self) -> None:
        if self._before is not None:
            self._before()
        raw = self._engine.raw_connection()  # autocommit driver connection: a checkpoint runs outside transactions
        try:
            raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            raw.close()
