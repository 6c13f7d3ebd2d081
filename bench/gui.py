"""Benchmark: GUI sandboxes side by side — ``--n`` computer-use desktops (Xvfb 1920×1080 +
openbox + Mousepad) and ``--n`` browser-use sandboxes (Chromium, the browser room's probe),
each started at once (one child process tree per sandbox, like a rollout's harness) and
driven with ``--actions`` actions concurrently.

Per kind it prints: sandbox start time (p50 / max), screenshot latency (mean of per-sandbox
means, max), actions/s per sandbox (mean) and in total, and memory per sandbox (mean RSS and PSS of the
sandbox's process tree; PSS splits pages shared between sandboxes).
The computer-use figures come from ``environments.computer.probe.probe_computer_sandboxes``,
the browser-use ones from ``environments.browser.probe.probe_browser_sandboxes`` (same
signature and keys); a kind whose probe cannot run is reported with the reason.

    python bench/gui.py [--n 8] [--actions 40] [--kinds computer,browser] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

console = Console()

PROBES = {
    "computer-use": ("environments.computer.probe", "probe_computer_sandboxes"),
    "browser-use": ("environments.browser.probe", "probe_browser_sandboxes"),
}
KEYS = ("start_s", "screenshot_ms", "actions_per_s", "rss_mb")


def summarize(rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    def col(k: str) -> list[float]:
        return [float(r[k]) for r in rows]

    starts = sorted(col("start_s"))
    return {
        "n": len(rows), "wall_s": round(seconds, 2),
        "start_p50_s": round(statistics.median(starts), 2), "start_max_s": round(starts[-1], 2),
        "screenshot_ms": round(statistics.mean(col("screenshot_ms")), 1),
        "screenshot_max_ms": round(max(col("screenshot_ms")), 1),
        "actions_per_s": round(statistics.mean(col("actions_per_s")), 1),
        "actions_per_s_total": round(sum(col("actions_per_s")), 1),
        "rss_mb": round(statistics.mean(col("rss_mb")), 1), "rss_total_mb": round(sum(col("rss_mb")), 1),
        "pss_mb": round(statistics.mean(col("pss_mb")), 1) if all("pss_mb" in r for r in rows) else None,
    }


async def run_kind(kind: str, n: int, actions: int) -> dict[str, Any]:
    module, name = PROBES[kind]
    try:
        probe = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        return {"error": f"{module}.{name} unavailable: {exc}"}
    t0 = time.monotonic()
    try:
        rows = await probe(n, actions)
    except Exception as exc:  # noqa: BLE001 - a bench reports what failed and goes on
        return {"error": f"{type(exc).__name__}: {exc}"}
    missing = [k for k in KEYS if any(k not in r for r in rows)]
    if not rows or missing:
        return {"error": f"probe returned {len(rows)} rows, missing keys {missing}"}
    return {**summarize(rows, time.monotonic() - t0), "rows": rows}


def table(results: dict[str, dict[str, Any]], n: int, actions: int) -> Table:
    t = Table(title=f"GUI sandboxes: {n} concurrent per kind, {actions} actions each ({os.cpu_count()} CPUs)")
    t.add_column("metric")
    for kind in results:
        t.add_column(kind, justify="right")
    metrics = [("sandbox start p50 / max (s)", lambda s: f"{s['start_p50_s']} / {s['start_max_s']}"),
               ("screenshot latency mean / max (ms)", lambda s: f"{s['screenshot_ms']} / {s['screenshot_max_ms']}"),
               ("actions/s per sandbox (total)", lambda s: f"{s['actions_per_s']} ({s['actions_per_s_total']})"),
               ("memory per sandbox: RSS / PSS (MiB)", lambda s: f"{s['rss_mb']} / {s['pss_mb']}"),
               ("wall time (s)", lambda s: f"{s['wall_s']}")]
    for label, fmt in metrics:
        t.add_row(label, *[("—" if "error" in s else fmt(s)) for s in results.values()])
    return t


async def main_async(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    kinds = [{"computer": "computer-use", "browser": "browser-use"}.get(k.strip(), k.strip())
             for k in args.kinds.split(",") if k.strip()]
    results: dict[str, dict[str, Any]] = {}
    for kind in kinds:  # one kind at a time: they would compete for the same CPUs
        console.print(f"[bold]{kind}[/]: {args.n} sandboxes × {args.actions} actions …")
        results[kind] = await run_kind(kind, args.n, args.actions)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--actions", type=int, default=40)
    p.add_argument("--kinds", default="computer,browser")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    results = asyncio.run(main_async(args))
    console.print(table(results, args.n, args.actions))
    for kind, s in results.items():
        if "error" in s:
            console.print(f"[red]{kind}[/]: {s['error']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
