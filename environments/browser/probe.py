"""Measure browser-use sandboxes for bench/gui.py: ``n`` sandboxes started at once, each a
process tree like a rollout's (the mock sites' server + Chromium driven by Playwright through
the harness's :class:`~environments.browser.executor.ActionExecutor`), then ``actions``
actions and screenshots each, all concurrently.

Each result: ``start_s`` (process start → sites healthy → Chromium up → first page
loaded), ``screenshot_ms`` (mean PNG screenshot of the 1280×720 viewport under load),
``actions_per_s`` (the action mix below), ``rss_mb`` (summed resident memory of the
sandbox's process tree: python, sites server, Playwright driver, Chromium processes; shared
pages count once per process) and ``pss_mb`` (proportional set size: shared pages split).
One child process per sandbox (``python -m environments.browser.probe --one``), without
bubblewrap (a bwrap sandbox adds its own start cost, see bench/rollouts.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The action mix (cycled) on the shop's home page: pointer, typing, keys, scrolling, navigation.
MIX: list[dict[str, Any]] = [
    {"action": "mouse_move", "x": 640, "y": 300},
    {"action": "click", "x": 1000, "y": 28},  # the header's search box
    {"action": "type", "text": "mouse"},
    {"action": "key", "keys": "Control+a"},
    {"action": "scroll", "amount": 300},
    {"action": "scroll", "amount": -300},
    {"action": "goto", "url": "http://shop.test/cart"},
    {"action": "go_back"},
]


def _tree(root: int) -> list[int]:
    """``root`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_memory_mb(root: int) -> tuple[float, float]:
    """(summed RSS, summed PSS) in MiB of ``root``'s process tree."""
    rss = pss = 0
    for pid in _tree(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return rss / 1024, pss / 1024


async def _one_sandbox(actions: int) -> dict[str, Any]:
    """Run inside the child: start sites + browser, report READY, wait for GO, act, measure."""
    from environments.browser.actions import action_from_dict
    from environments.browser.executor import ActionExecutor
    from environments.browser.session import BrowserConfig, BrowserSession
    from environments.runner.services import ServiceGroup

    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="openforge-bu-probe-"))
    sites = ServiceGroup(["shop"], None, python=sys.executable, env=dict(os.environ), cwd=work,
                         log_path=work / "sites.log", timeout=60)
    url = await sites.start()
    try:
        async with BrowserSession(BrowserConfig.from_env(sites_url=url)) as browser:
            executor = ActionExecutor(browser)
            first = await executor.execute(action_from_dict({"action": "goto", "url": "http://shop.test/"}))
            if not first.ok:
                raise RuntimeError(first.message)
            start_s = time.monotonic() - t0
            sys.stdout.write("READY\n")
            sys.stdout.flush()
            await asyncio.to_thread(sys.stdin.readline)  # all sandboxes up: measure under the full load
            t1 = time.monotonic()
            for k in range(actions):
                result = await executor.execute(action_from_dict(MIX[k % len(MIX)]))
                if not result.ok:
                    raise RuntimeError(f"action {MIX[k % len(MIX)]}: {result.message}")
            acted = time.monotonic() - t1
            shots = []
            for _ in range(max(3, actions // 4)):
                t = time.monotonic()
                await browser.screenshot()
                shots.append((time.monotonic() - t) * 1000)
            rss, pss = tree_memory_mb(os.getpid())
    finally:
        await sites.stop()
    return {"start_s": round(start_s, 3), "screenshot_ms": round(statistics.mean(shots), 1),
            "actions_per_s": round(actions / acted, 1), "rss_mb": round(rss, 1), "pss_mb": round(pss, 1)}


async def probe_browser_sandboxes(n: int, actions: int) -> list[dict[str, Any]]:
    """Start ``n`` browser sandboxes at once, run ``actions`` actions on each; one dict each."""
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "environments.browser.probe", "--one", "--actions", str(actions),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True) for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout is not None
            line = await asyncio.wait_for(p.stdout.readline(), 180)
            if line.strip() != b"READY":
                err = (await p.stderr.read()).decode(errors="replace").strip().splitlines() if p.stderr else []
                raise RuntimeError(f"browser sandbox did not start: {(err or [line.decode()])[-1]}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"GO\n")
            await p.stdin.drain()
        rows = []
        for p in procs:
            out, err = await asyncio.wait_for(p.communicate(), 300)
            if p.returncode != 0:
                raise RuntimeError(f"browser sandbox failed: {err.decode(errors='replace').strip().splitlines()[-1:]}")
            rows.append(json.loads(out.decode().strip().splitlines()[-1]))
        return rows
    finally:
        for p in procs:
            if p.returncode is None:
                try:
                    os.killpg(p.pid, 9)
                except ProcessLookupError:
                    pass
                await p.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m environments.browser.probe")
    p.add_argument("--one", action="store_true", help="run one sandbox (the child side)")
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--actions", type=int, default=20)
    ns = p.parse_args(argv)
    if ns.one:
        print(json.dumps(asyncio.run(_one_sandbox(ns.actions))))
    else:
        for row in asyncio.run(probe_browser_sandboxes(ns.n, ns.actions)):
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
