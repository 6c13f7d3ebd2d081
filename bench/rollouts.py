"""Benchmark: 64 noop + 64 oracle rollouts through the scheduler on each sandbox backend.

For each available backend (local always; docker when an engine and the base image are
there), runs ``--n`` noop and ``--n`` oracle rollouts of one task with ``--concurrency``
sandboxes at a time, and prints: rollouts/s, p50/p99 sandbox start latency (from
``start()`` to the sandbox process/container running), p50 rollout seconds, rewards
(oracle must be 1.0, noop 0.0), peak memory (this process's max RSS and the peak summed
RSS of all sandbox processes, sampled every 0.5 s) and leaked sandboxes (dirs, processes,
containers left afterwards: must be 0). The local and docker start latencies are shown
side by side.

    python bench/rollouts.py [--n 64] [--concurrency 8] [--backends local,docker]
                             [--task DIR] [--json OUT]

The task defaults to the first claw example (environments/claw/examples/*), else a tiny
file task generated in a temp dir.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from environments.records import RolloutSpec
from environments.taskdir import TaskConfig, TaskSection, load_task, write_task
from training.orchestrator.factory import available_backends, make_backend
from training.orchestrator.procs import SANDBOX_ENV, all_sandbox_ids
from training.orchestrator.scheduler import Scheduler, new_rollout_id

console = Console()


def default_task(tmp: Path) -> Path:
    examples = Path(__file__).resolve().parents[1] / "environments" / "claw" / "examples"
    for cand in sorted(examples.glob("*/task.toml")) if examples.is_dir() else []:
        return cand.parent
    cfg = TaskConfig(task=TaskSection(name="bench-file", description="write hello"))
    files = {
        "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
        "tests/test.sh": '#!/usr/bin/env bash\nif [ "$(cat out.txt 2>/dev/null)" = hello ]; then r=1; else r=0; fi\n'
                         'echo $r > "${LOGS_DIR:-/logs}/verifier/reward.txt"\n',
        "solution/solve.sh": "#!/usr/bin/env bash\necho hello > out.txt\n",
    }
    return write_task(tmp / "bench-file", cfg, "Write hello into out.txt.", files).path


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


def sandbox_rss_mb() -> float:
    """Summed RSS of every process carrying the sandbox marker."""
    needle = f"{SANDBOX_ENV}=".encode()
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{entry.name}/environ").read_bytes():
                continue
            for line in Path(f"/proc/{entry.name}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


async def bench_backend(name: str, task: Path, n: int, concurrency: int, timeout: float) -> dict:
    backend = make_backend(name)
    specs = [RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), task_id=task.name, harness=h,
                         timeout_sec=timeout, role="test") for h in ["noop"] * n + ["oracle"] * n]
    peak = {"sandbox_rss_mb": 0.0}
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            peak["sandbox_rss_mb"] = max(peak["sandbox_rss_mb"], await asyncio.to_thread(sandbox_rss_mb))
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except TimeoutError:
                pass

    sampler = asyncio.create_task(sample())
    results = []
    t0 = time.monotonic()
    try:
        # Warm-up outside the timing: builds (and caches) the docker image of the task.
        warm = RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness="noop", timeout_sec=timeout)
        await Scheduler(backend).run_one(warm)
        t0 = time.monotonic()
        sched = Scheduler(backend, concurrency=concurrency)
        async for r in sched.run(specs):
            results.append(r)
        wall = time.monotonic() - t0
    finally:
        stop.set()
        await sampler
        leaked_live = await backend.live_sandboxes()
        await backend.aclose()
    ids = {s.rollout_id for s in specs}
    leaked = sorted(set(leaked_live) | (all_sandbox_ids() & ids))
    starts = [r.timings.get("start_latency", float("nan")) for r in results if "start_latency" in r.timings]
    by = {h: [r for r in results if r.harness == h] for h in ("noop", "oracle")}
    return {
        "backend": name,
        "isolation": sorted({r.isolation for r in results if r.isolation}),
        "rollouts": len(results),
        "wall_s": round(wall, 2),
        "rollouts_per_s": round(len(results) / wall, 3),
        "start_latency_p50_s": round(pct(starts, 50), 3),
        "start_latency_p99_s": round(pct(starts, 99), 3),
        "rollout_p50_s": round(statistics.median([r.seconds for r in results]), 2) if results else None,
        "statuses": {s: sum(1 for r in results if r.status.value == s) for s in {r.status.value for r in results}},
        "oracle_reward_1": sum(1 for r in by["oracle"] if r.reward == 1.0),
        "noop_reward_0": sum(1 for r in by["noop"] if r.reward == 0.0),
        "peak_sandbox_rss_mb": round(peak["sandbox_rss_mb"], 1),
        "peak_orchestrator_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "leaked_sandboxes": len(leaked),
    }


async def main_async(args: argparse.Namespace) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="openforge-bench-") as tmp:
        os.environ.setdefault("OPENFORGE_HOME", str(Path(tmp) / "home"))
        from openforge.settings import get_settings

        get_settings.cache_clear()
        task = Path(args.task).resolve() if args.task else default_task(Path(tmp))
        load_task(task)
        avail = available_backends()
        out = []
        for name in args.backends.split(","):
            reason = avail.get(name, f"unknown backend {name!r}")
            if reason:
                console.print(f"[yellow]skip {name}: {reason}[/]")
                continue
            console.print(f"{name}: {2 * args.n} rollouts of {task.name}, concurrency {args.concurrency} ...")
            out.append(await bench_backend(name, task, args.n, args.concurrency, args.timeout))
        return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=64, help="noop and oracle rollouts each (default 64)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--backends", default="local,docker")
    p.add_argument("--task", help="task dir (default: first claw example, else a tiny file task)")
    p.add_argument("--timeout", type=float, default=600.0, help="per-rollout wall clock")
    p.add_argument("--json", help="write the results as JSON here")
    args = p.parse_args()
    rows = asyncio.run(main_async(args))
    table = Table(title="rollouts through the scheduler")
    table.add_column("metric")
    for r in rows:
        table.add_column(r["backend"])
    for key in [k for k in (rows[0] if rows else {}) if k != "backend"]:
        table.add_row(key, *[json.dumps(r[key]) if isinstance(r[key], (dict, list)) else str(r[key]) for r in rows])
    console.print(table)
    if len(rows) > 1:
        console.print("start latency p50 / p99: " + "  vs  ".join(
            f"{r['backend']} {r['start_latency_p50_s']:.3f}s / {r['start_latency_p99_s']:.3f}s" for r in rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    if any(r["leaked_sandboxes"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
