"""Benchmark: 64 concurrent workers claim and transition 10,000 task rows.

For each DB (SQLite file; PostgreSQL when reachable) and each worker kind (threads,
processes), every worker loops: ``claim_next("test")`` → ``built → testing`` (held) →
read-modify-write of a shared counter (SELECT ... FOR UPDATE, then UPDATE) →
``testing → verified``. Printed per run: rows/s, double claims, lost updates (rows not
verified + counter increments that vanished), lock errors. All three must be 0.

    python bench/db_claims.py [--rows 10000] [--workers 64] [--pg URL]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sqlalchemy import func, select, text  # noqa: E402
from sqlalchemy.exc import OperationalError  # noqa: E402

from storage.claims import claim_next, transition_task  # noqa: E402
from storage.db import make_engine, session_scope  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from storage.models import Base, Run, Task, TaskStatus  # noqa: E402

COUNTER_RUN = "bench-counter"


def prepare(url: str, rows: int) -> None:
    engine = make_engine(url)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            Base.metadata.drop_all(conn)
            conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    upgrade(url, engine)
    with session_scope(engine) as s:
        s.add(Run(id=COUNTER_RUN, kind="bench", cost_usd=0.0))
    batch = 2000
    for start in range(0, rows, batch):
        with session_scope(engine) as s:
            s.add_all(
                Task(id=f"task-{i:06d}", dir="/dev/null", status="built", domain="bench")
                for i in range(start, min(rows, start + batch))
            )
    engine.dispose()


def worker_loop(url: str, worker: str, out: list, pool_size: int = 1) -> None:
    """Claim until nothing is left; append (claimed ids, lock errors) to ``out``."""
    engine = make_engine(url, pool_size=pool_size)
    claimed: list[str] = []
    lock_errors = 0
    while True:
        try:
            task_id = claim_next(engine, "test", worker, lease_seconds=3600)
        except OperationalError as exc:
            lock_errors += "locked" in str(exc)
            continue
        if task_id is None:
            break
        claimed.append(task_id)
        try:
            transition_task(engine, task_id, TaskStatus.testing, worker=worker, keep_claim=True)
            with session_scope(engine) as s:  # read-modify-write of one shared row
                run = s.execute(select(Run).where(Run.id == COUNTER_RUN).with_for_update()).scalar_one()
                run.cost_usd = run.cost_usd + 1.0
            transition_task(engine, task_id, TaskStatus.verified, worker=worker)
        except OperationalError as exc:
            lock_errors += "locked" in str(exc)
    engine.dispose()
    out.append((claimed, lock_errors))


def _process_entry(url: str, worker: str, queue, ready, go) -> None:  # noqa: ANN001
    out: list = []
    ready.release()
    go.wait()  # start together: process start-up is not part of the measurement
    worker_loop(url, worker, out)
    queue.put(out[0])


def run_threads(url: str, workers: int) -> list:
    out: list = []
    engine_pool = max(2, workers)
    threads = [threading.Thread(target=worker_loop, args=(url, f"t{i}", out, engine_pool)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def run_processes(url: str, workers: int, started: list[float]) -> list:
    ctx = mp.get_context("spawn")
    queue, ready, go = ctx.Queue(), ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_process_entry, args=(url, f"p{i}", queue, ready, go)) for i in range(workers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    started[0] = time.perf_counter()
    go.set()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return results


def measure(label: str, url: str, kind: str, rows: int, workers: int) -> dict:
    prepare(url, rows)
    started = [time.perf_counter()]
    results = run_threads(url, workers) if kind == "threads" else run_processes(url, workers, started)
    seconds = time.perf_counter() - started[0]
    counts = Counter(task_id for claimed, _ in results for task_id in claimed)
    double = sum(1 for n in counts.values() if n > 1)
    engine = make_engine(url)
    with session_scope(engine) as s:
        verified = s.scalar(select(func.count()).select_from(Task).where(Task.status == "verified"))
        counter = s.get(Run, COUNTER_RUN).cost_usd
    engine.dispose()
    lost = (rows - verified) + int(round(rows - counter))
    return {
        "db": label, "workers": f"{workers} {kind}", "rows": rows, "seconds": seconds,
        "rows_per_s": rows / seconds, "double_claims": double, "lost_updates": lost,
        "lock_errors": sum(errors for _, errors in results), "claimed": sum(counts.values()),
    }


def pg_url_from_args(arg: str | None) -> str | None:
    if arg:
        return arg
    if os.environ.get("OPENFORGE_TEST_PG_URL"):
        return os.environ["OPENFORGE_TEST_PG_URL"]
    script = Path(__file__).resolve().parents[1] / "scripts" / "start-postgres.sh"
    try:
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=180, check=True)
        return out.stdout.strip().splitlines()[-1]
    except (subprocess.SubprocessError, OSError, IndexError) as exc:
        print(f"PostgreSQL not reachable, skipped: {exc}")
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--pg", default=None, help="PostgreSQL URL (default: start one with scripts/start-postgres.sh)")
    parser.add_argument("--no-pg", action="store_true")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="openforge-bench-db-"))
    targets = [("sqlite", f"sqlite:///{tmp / 'bench.db'}")]
    pg = None if args.no_pg else pg_url_from_args(args.pg)
    if pg:
        targets.append(("postgresql", pg))
    results = []
    for label, url in targets:
        for kind in ("threads", "processes"):
            if label == "sqlite":
                for f in tmp.glob("bench.db*"):
                    f.unlink()
            results.append(measure(label, url, kind, args.rows, args.workers))
            r = results[-1]
            print(f"{label:10} {r['workers']:13} {r['rows_per_s']:8.0f} rows/s  double={r['double_claims']} "
                  f"lost={r['lost_updates']} lock_errors={r['lock_errors']}", flush=True)
    table = Table(title=f"{args.workers} workers claim + transition {args.rows} rows")
    for col in ("db", "workers", "seconds", "rows/s", "double claims", "lost updates", "lock errors"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(r["db"], r["workers"], f"{r['seconds']:.1f}", f"{r['rows_per_s']:.0f}",
                      str(r["double_claims"]), str(r["lost_updates"]), str(r["lock_errors"]))
    Console().print(table)
    bad = [r for r in results if r["double_claims"] or r["lost_updates"] or r["lock_errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
