"""Large recorded payloads in side files next to the SQLite DB (DESIGN §4).

SQLite writes a row's bytes twice (WAL, then the database at a checkpoint, with fsyncs), so
from ~100 KB a row costs 3-10x what appending the same bytes to a file does
(bench/proxy_storage.py). A call whose JSON payload columns (``storage.calls.SIDE_COLUMNS``)
reach ``threshold`` bytes goes as one JSON line into its rollout's file
``<root>/<hh>/<sha256(rollout id)[:32]>.jsonl``; the row keeps ``side_file`` =
``path#offset:length`` and NULL in those columns; ``storage.calls.expand_calls`` reads it
back, so readers see the same calls. The line is written (not fsynced) before the row's
commit, so an acknowledged call survives SIGKILL as the WAL does; :meth:`SideFiles.sync`
fsyncs the files written since the last call, and the checkpointer calls it before each
checkpoint, so a row is never on disk for good while its payload is not. Used for SQLite
only: a PostgreSQL DB is shared by proxies on many hosts, which would need shared storage.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from storage.calls import side_ref

#: Payloads from this many JSON bytes on go to a side file (the measured break-even is
#: between 20 and 100 KB; most calls of a long trajectory stay under it with linear storage).
DEFAULT_THRESHOLD = 64 * 1024


class SideFiles:
    """Appends payloads to per-rollout JSONL files under ``root`` (from the writer thread)."""

    def __init__(self, root: Path, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.root = root
        self.threshold = threshold
        self._dirty: set[Path] = set()
        self._lock = threading.Lock()
        self._made: set[Path] = set()

    def path_for(self, rollout_id: str) -> Path:
        """The rollout's file; named by a hash, since a rollout id may come from a caller."""
        digest = hashlib.sha256(rollout_id.encode()).hexdigest()
        return self.root / digest[:2] / f"{digest[:32]}.jsonl"

    def append(self, rollout_id: str, encoded: dict[str, str]) -> str:
        """Write one line ``{column: JSON, ...}`` from already encoded JSON texts; returns the row's ``side_file``."""
        line = ("{" + ",".join(f'"{k}":{v}' for k, v in encoded.items()) + "}\n").encode()
        path = self.path_for(rollout_id)
        if path.parent not in self._made:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(path.parent)
        with path.open("ab") as fh:
            offset = fh.tell()
            fh.write(line)
        with self._lock:
            self._dirty.add(path)
        return side_ref(str(path), offset, len(line) - 1)

    def sync(self) -> None:
        """fsync every file written since the last call (before a checkpoint makes rows durable)."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        for path in dirty:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
