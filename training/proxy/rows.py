"""The recorder's hot write: ``model_calls`` rows as one precompiled executemany.

SQLAlchemy Core's ``conn.execute(table.insert(), rows)`` spends ~0.4 ms of CPU per statement
here on compiling, cache keys and per-row bind processing before the driver sees a row, and
json.dumps on every JSON column; the driver's own work is ~40 µs a row. So the INSERT (and
the rollouts' ``n_calls`` UPDATE) is compiled once for the DB's dialect and sent with
``Connection.exec_driver_sql``: JSON columns are encoded with orjson, other columns go
through the column type's own bind processor (SQLite's DATETIME format), and the SQL keeps
the dialect's casts (``::JSON`` on PostgreSQL). What lands in the DB is what Core would have
written (JSON ``null`` for ``None`` in a JSON column, as Core does), only compact.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
from sqlalchemy import JSON, Connection, Table, bindparam, update
from sqlalchemy.engine import Dialect

from storage.calls import SIDE_COLUMNS
from storage.models import ModelCall, Rollout
from training.proxy.side_files import SideFiles

_CALLS: Table = ModelCall.__table__  # type: ignore[assignment]
_ROLLOUTS: Table = Rollout.__table__  # type: ignore[assignment]
#: Every column a recorded call sets (all but the autoincrement id).
CALL_COLUMNS: tuple[str, ...] = tuple(c.name for c in _CALLS.columns if c.name != "id")
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_text(value: Any) -> str:
    """``value`` as JSON text: orjson, else the standard library for what orjson refuses
    (integers over 64 bits), so nothing Core could store is refused here. Token ids held as
    an ``array('q')`` (the recorder's form, training/proxy/recorder.py) are written as the
    JSON list of their ints, exactly what the list would give, through a zero-copy numpy view."""
    if type(value) is array:
        value = np.frombuffer(value, dtype=np.int64) if value.typecode == "q" else value.tolist()
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS).decode()
    except TypeError:
        return json.dumps(value)


Encoder = Callable[[Any], Any]


class _Statement:
    """One statement compiled for a dialect, with the encoder of each bound parameter."""

    def __init__(self, stmt: Any, dialect: Dialect, columns: Sequence[str], types: Mapping[str, Any]) -> None:
        compiled = stmt.compile(dialect=dialect, column_keys=list(columns), for_executemany=True)
        self.sql = str(compiled)
        self.positional = bool(compiled.positional)
        names = list(compiled.positiontup or []) if self.positional else list(columns)
        self.encoders: list[tuple[str, Encoder | None]] = []
        for name in names:
            type_ = types[name]
            if isinstance(type_, JSON):
                self.encoders.append((name, json_text))
            else:
                process = type_.dialect_impl(dialect).bind_processor(dialect)
                self.encoders.append((name, None if process is None else _skip_none(process)))

    def params(self, row: Mapping[str, Any], ready: Mapping[str, Any] | None = None) -> tuple[Any, ...] | dict[str, Any]:
        """The bound values of ``row``; ``ready`` holds values already in their bound form."""
        values = [(name, ready[name] if ready is not None and name in ready
                   else row.get(name) if enc is None else enc(row.get(name))) for name, enc in self.encoders]
        return tuple(v for _, v in values) if self.positional else dict(values)

    def run(self, conn: Connection | Any, rows: Sequence[Mapping[str, Any]],
            ready: Sequence[Mapping[str, Any] | None] | None = None) -> None:
        """Execute for ``rows`` on a SQLAlchemy connection, or on a DB-API connection
        (SQLite's, inside a transaction its caller began)."""
        if rows:
            params = [self.params(r, ready[i] if ready else None) for i, r in enumerate(rows)]
            if isinstance(conn, Connection):
                conn.exec_driver_sql(self.sql, params)
            else:
                conn.executemany(self.sql, params)


def _skip_none(process: Encoder) -> Encoder:
    return lambda value: None if value is None else process(value)


class CallRows:
    """Writes ``model_calls`` rows and the rollouts' call counts for one dialect; with
    ``side``, a row whose payload columns reach its threshold keeps them in a side file."""

    def __init__(self, dialect: Dialect, side: SideFiles | None = None) -> None:
        self.side = side
        call_types = {c.name: c.type for c in _CALLS.columns}
        self._insert = _Statement(_CALLS.insert(), dialect, CALL_COLUMNS, call_types)
        count = update(_ROLLOUTS).where(_ROLLOUTS.c.id == bindparam("rid")).values(n_calls=bindparam("n"))
        self._count = _Statement(count, dialect, ("n", "rid"), {"n": _ROLLOUTS.c.n_calls.type,
                                                                 "rid": _ROLLOUTS.c.id.type})

    def insert(self, conn: Connection | Any, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert ``model_calls`` rows (keys of :data:`CALL_COLUMNS`; missing ones are NULL);
        ``conn``: a SQLAlchemy connection or SQLite's DB-API connection (see :meth:`_Statement.run`)."""
        if self.side is None:
            self._insert.run(conn, rows)
            return
        ready: list[dict[str, Any] | None] = []
        for row in rows:
            encoded = {k: json_text(row[k]) for k in SIDE_COLUMNS if row.get(k) is not None}
            if sum(len(v) for v in encoded.values()) < self.side.threshold:
                ready.append(encoded)  # encoded once: the row holds them
                continue
            ref = self.side.append(row["rollout_id"], encoded)  # written before this transaction commits
            ready.append({**dict.fromkeys(SIDE_COLUMNS), "side_file": ref})
        self._insert.run(conn, rows, ready)

    def set_counts(self, conn: Connection | Any, counts: Mapping[str, int]) -> None:
        """``rollouts.n_calls`` of each rollout id, in one executemany."""
        self._count.run(conn, [{"rid": rid, "n": n} for rid, n in counts.items()])
