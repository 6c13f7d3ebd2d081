"""Where should a large recorded payload go: the SQLite row, or a side file the row points to?

DESIGN §4 allows model calls' large payloads in side files "when that is cheaper". This
measures, on this machine, the cost the recorder's writer pays per call for JSON payloads of
several sizes (token ids, as linear storage writes them: a trajectory's first call is ~100 KB,
later calls ~20-30 KB, bench/proxy_load.py):

- ``row``: the payload in the row, SQLite checkpointing inside the commit (its default);
- ``row, ckpt beside``: the same with automatic checkpoints off and a PASSIVE checkpoint in a
  second thread, as the recorder now runs (training/proxy/checkpoint.py);
- ``file``: one side file per call, its path in the row; ``jsonl``: appended to one file per
  rollout, offset in the row. Side files are written, not fsynced (the same SIGKILL
  durability as SQLite's WAL with synchronous=NORMAL);
- reading a payload back (row vs file).

Each figure: median of ``--repeat`` runs; WAL mode, synchronous=NORMAL, as storage/db.py.
Usage: ``python bench/proxy_storage.py [--repeat 3] [--dir /tmp]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

import orjson

SIZES = (2_000, 20_000, 100_000, 500_000, 2_000_000)


def _payloads(size: int, k: int = 20) -> list[str]:
    rng = random.Random(size)
    return [orjson.dumps({"prompt_token_ids": [rng.randrange(151_000) for _ in range(size // 7)]}).decode()
            for _ in range(k)]


def _connect(path: Path, autocheckpoint: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if not autocheckpoint:
        conn.execute("PRAGMA wal_autocheckpoint=0")
    return conn


def _commit(conn: sqlite3.Connection, sql: str, params: tuple) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(sql, params)
    conn.execute("COMMIT")


def one_size(size: int, n: int, root: Path) -> dict[str, float]:
    texts = _payloads(size)
    out: dict[str, float] = {}
    work = Path(tempfile.mkdtemp(dir=root))
    try:
        for label, autocheckpoint in (("row", True), ("row, ckpt beside", False)):
            db = work / f"{label[:3]}{int(autocheckpoint)}.db"
            conn = _connect(db, autocheckpoint)
            conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, idx INT, body TEXT, side_file TEXT)")
            stop = threading.Event()
            checkpointer = None
            if not autocheckpoint:
                side = _connect(db, True)

                def run(side: sqlite3.Connection = side, stop: threading.Event = stop) -> None:
                    while not stop.wait(0.5):
                        side.execute("PRAGMA wal_checkpoint(PASSIVE)")

                checkpointer = threading.Thread(target=run, daemon=True)
                checkpointer.start()
            t0 = time.perf_counter()
            for i in range(n):
                _commit(conn, "INSERT INTO m(idx, body) VALUES (?, ?)", (i, texts[i % len(texts)]))
            out[label] = (time.perf_counter() - t0) / n * 1e3
            stop.set()
            if checkpointer is not None:
                checkpointer.join()
            if label == "row":
                t0 = time.perf_counter()
                for (body,) in conn.execute("SELECT body FROM m"):
                    orjson.loads(body)
                out["read row"] = (time.perf_counter() - t0) / n * 1e3
            conn.close()
        conn = _connect(work / "files.db", True)
        conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, idx INT, body TEXT, side_file TEXT)")
        (work / "side").mkdir()
        t0 = time.perf_counter()
        for i in range(n):
            path = work / "side" / f"{i}.json"
            path.write_text(texts[i % len(texts)])
            _commit(conn, "INSERT INTO m(idx, side_file) VALUES (?, ?)", (i, str(path)))
        out["file"] = (time.perf_counter() - t0) / n * 1e3
        t0 = time.perf_counter()
        for (path,) in conn.execute("SELECT side_file FROM m"):
            orjson.loads(Path(path).read_bytes())
        out["read file"] = (time.perf_counter() - t0) / n * 1e3
        with (work / "side" / "rollout.jsonl").open("ab") as fh:
            t0 = time.perf_counter()
            for i in range(n):
                offset = fh.tell()
                fh.write(texts[i % len(texts)].encode() + b"\n")
                fh.flush()
                _commit(conn, "INSERT INTO m(idx, side_file) VALUES (?, ?)", (i, f"rollout.jsonl:{offset}"))
            out["jsonl"] = (time.perf_counter() - t0) / n * 1e3
        conn.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where the DBs and files go")
    args = p.parse_args()
    cols = ("row", "row, ckpt beside", "file", "jsonl", "read row", "read file")
    print(f"ms per call, median of {args.repeat} runs [min-max]; {os.cpu_count()} CPUs, files under {args.dir}")
    print(f"{'payload':>9} " + " ".join(f"{c:>22}" for c in cols))
    for size in SIZES:
        runs = [one_size(size, 200 if size < 500_000 else 50, args.dir) for _ in range(args.repeat)]
        cells = []
        for c in cols:
            v = [r[c] for r in runs]
            cells.append(f"{statistics.median(v):7.3f} [{min(v):.3f}-{max(v):.3f}]")
        print(f"{size:9d} " + " ".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
