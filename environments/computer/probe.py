"""Measure computer-use sandboxes for bench/gui.py: ``n`` sandboxes started at once, each a
process tree like a rollout's harness (python + Xvfb 1920×1080 + openbox + Mousepad), then
``actions`` computer actions and screenshots each, all concurrently. Same signature and keys
as ``environments.browser.probe.probe_browser_sandboxes``.

Each result: ``start_s`` (process start → imports → Xvfb → window manager → Mousepad's
window visible), ``screenshot_ms`` (mean PNG grab+encode of the screen under load),
``actions_per_s`` (the action mix below through
:class:`~environments.computer.actions.ComputerTool`, settle delay off), ``rss_mb`` /
``pss_mb`` (summed resident / proportional memory of the sandbox's process tree after the
actions). One child process per sandbox (``python -m environments.computer.probe --one``),
without bubblewrap (a bwrap sandbox adds its own start cost, see bench/rollouts.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T0 = time.monotonic()  # the child's start, before the heavy imports below

from environments.gui.procmem import tree_memory_mb

#: The action mix of a probe (cycled): pointer, clicks, typing, keys, scrolling.
MIX: list[dict[str, Any]] = [
    {"action": "mouse_move", "coordinate": [0.3, 0.4]},
    {"action": "left_click", "coordinate": [0.5, 0.5]},
    {"action": "type", "text": "hello desktop"},
    {"action": "key", "text": "ctrl+a"},
    {"action": "key", "text": "BackSpace"},
    {"action": "scroll", "coordinate": [0.5, 0.5], "direction": "down", "amount": 2},
    {"action": "double_click", "coordinate": [0.5, 0.5]},
]


async def _one_sandbox(actions: int) -> dict[str, Any]:
    """Run inside the child: start the desktop, report READY, wait for GO, act, measure."""
    from environments.computer.actions import ComputerTool
    from environments.computer.desktop import DesktopConfig, DesktopSession

    work = Path(tempfile.mkdtemp(prefix="openforge-cu-probe-"))
    session = DesktopSession(DesktopConfig(), home=work / "home", log_path=work / "desktop.log")
    try:
        await session.start()
        await session.launch(["mousepad", str(work / "probe.txt")], cwd=work)
        await session.run(["xdotool", "search", "--sync", "--onlyvisible", "--class", "mousepad"], timeout=120)
        start_s = time.monotonic() - T0
        sys.stdout.write("READY\n")
        sys.stdout.flush()
        await asyncio.to_thread(sys.stdin.readline)  # all sandboxes up: measure under the full load
        tool = ComputerTool(session, settle=0.0)
        t1 = time.monotonic()
        for k in range(actions):
            result = await tool(MIX[k % len(MIX)])
            if result.error:
                raise RuntimeError(result.text)
        acted = time.monotonic() - t1
        shots = []
        for _ in range(max(3, actions // 4)):
            t = time.monotonic()
            await session.screenshot()
            shots.append((time.monotonic() - t) * 1000)
        rss, pss = tree_memory_mb(os.getpid())
    finally:
        await session.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {"start_s": round(start_s, 3), "screenshot_ms": round(statistics.mean(shots), 1),
            "actions_per_s": round(actions / acted, 1), "rss_mb": round(rss, 1), "pss_mb": round(pss, 1)}


async def probe_computer_sandboxes(n: int, actions: int) -> list[dict[str, Any]]:
    """Start ``n`` computer-use sandboxes at once, run ``actions`` actions on each; one dict each."""
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "environments.computer.probe", "--one", "--actions", str(actions),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True) for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout is not None and p.stderr is not None
            line = await asyncio.wait_for(p.stdout.readline(), 180)
            if line.strip() != b"READY":
                err = (await p.stderr.read()).decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"computer-use sandbox did not start: {(err or [line.decode()])[-1]}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"GO\n")
            await p.stdin.drain()
        rows = []
        for p in procs:
            out, err = await asyncio.wait_for(p.communicate(), 300)
            if p.returncode != 0:
                tail = err.decode(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(f"computer-use sandbox failed: {tail}")
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
    p = argparse.ArgumentParser(prog="python -m environments.computer.probe")
    p.add_argument("--one", action="store_true", help="run one sandbox (the child side)")
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--actions", type=int, default=20)
    ns = p.parse_args(argv)
    if ns.one:
        print(json.dumps(asyncio.run(_one_sandbox(ns.actions))))
    else:
        for row in asyncio.run(probe_computer_sandboxes(ns.n, ns.actions)):
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
