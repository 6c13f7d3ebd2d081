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

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T0 = time.monotonic()  # the child's start, before the heavy imports below

from environments.gui.probing import (
    probe_main,
    probe_row,
    run_probe_children,
    wait_for_go,
)

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
        await wait_for_go()  # all sandboxes up: measure under the full load
        tool = ComputerTool(session, settle=0.0)
        t1 = time.monotonic()
        for k in range(actions):
            result = await tool(MIX[k % len(MIX)])
            if result.error:
                raise RuntimeError(result.text)
        row = await probe_row(start_s, actions, time.monotonic() - t1, session.screenshot)
    finally:
        await session.stop()
        shutil.rmtree(work, ignore_errors=True)
    return row


async def probe_computer_sandboxes(n: int, actions: int) -> list[dict[str, Any]]:
    """Start ``n`` computer-use sandboxes at once, run ``actions`` actions on each; one dict each."""
    return await run_probe_children("environments.computer.probe", "computer-use", n, actions)


def main(argv: list[str] | None = None) -> int:
    return probe_main("environments.computer.probe", "computer-use", _one_sandbox, argv)


if __name__ == "__main__":
    sys.exit(main())
