"""The shared half of the GUI sandbox probes (environments/{computer,browser}/probe.py).

The parent starts ``n`` probe children at once (``python -m <module> --one``), waits until
every one printed ``READY``, then sends ``GO`` to all so the measurements run under the full
load, and collects each child's last stdout line (one JSON row). A child reports with
:func:`wait_for_go` and :func:`probe_row`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from environments.gui.procmem import tree_memory_mb


async def run_probe_children(module: str, label: str, n: int, actions: int) -> list[dict[str, Any]]:
    """Start ``n`` ``module --one`` children at once, release them together; one row each."""
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, "--one", "--actions", str(actions),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True) for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout is not None and p.stderr is not None
            line = await asyncio.wait_for(p.stdout.readline(), 180)
            if line.strip() != b"READY":
                err = (await p.stderr.read()).decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"{label} sandbox did not start: {(err or [line.decode()])[-1]}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"GO\n")
            await p.stdin.drain()
        rows = []
        for p in procs:
            out, err = await asyncio.wait_for(p.communicate(), 300)
            if p.returncode != 0:
                tail = err.decode(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(f"{label} sandbox failed: {tail}")
            rows.append(json.loads(out.decode().strip().splitlines()[-1]))
        return rows
    finally:
        for p in procs:
            if p.returncode is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                await p.wait()


async def wait_for_go() -> None:
    """Child side: say ``READY`` and wait for the parent's ``GO`` (all sandboxes up)."""
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    await asyncio.to_thread(sys.stdin.readline)


async def probe_row(start_s: float, actions: int, acted_s: float,
                    screenshot: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """Child side: time ``max(3, actions // 4)`` screenshots, read this process tree's memory."""
    shots = []
    for _ in range(max(3, actions // 4)):
        t = time.monotonic()
        await screenshot()
        shots.append((time.monotonic() - t) * 1000)
    rss, pss = tree_memory_mb(os.getpid())
    return {"start_s": round(start_s, 3), "screenshot_ms": round(statistics.mean(shots), 1),
            "actions_per_s": round(actions / acted_s, 1), "rss_mb": round(rss, 1), "pss_mb": round(pss, 1)}


def probe_main(module: str, label: str, one_sandbox: Callable[[int], Coroutine[Any, Any, dict[str, Any]]],
               argv: list[str] | None = None) -> int:
    """The probe CLI (``python -m <module>``): ``--one`` is a child running ``one_sandbox``,
    otherwise ``--n`` children through :func:`run_probe_children`; one JSON line per row."""
    p = argparse.ArgumentParser(prog=f"python -m {module}")
    p.add_argument("--one", action="store_true", help="run one sandbox (the child side)")
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--actions", type=int, default=20)
    ns = p.parse_args(argv)
    if ns.one:
        print(json.dumps(asyncio.run(one_sandbox(ns.actions))))
    else:
        for row in asyncio.run(run_probe_children(module, label, ns.n, ns.actions)):
            print(json.dumps(row))
    return 0
