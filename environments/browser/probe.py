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

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from environments.gui.probing import (
    probe_main,
    probe_row,
    run_probe_children,
    wait_for_go,
)

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


async def _one_sandbox(actions: int) -> dict[str, Any]:
    """Run inside the child: start sites + browser, report READY, wait for GO, act, measure."""
    from environments.browser.actions import action_from_dict
    from environments.browser.executor import ActionExecutor
    from environments.browser.session import BrowserConfig, BrowserSession
    from environments.service_group import ServiceGroup

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
            await wait_for_go()  # all sandboxes up: measure under the full load
            t1 = time.monotonic()
            for k in range(actions):
                result = await executor.execute(action_from_dict(MIX[k % len(MIX)]))
                if not result.ok:
                    raise RuntimeError(f"action {MIX[k % len(MIX)]}: {result.message}")
            row = await probe_row(start_s, actions, time.monotonic() - t1, browser.screenshot)
    finally:
        await sites.stop()
    return row


async def probe_browser_sandboxes(n: int, actions: int) -> list[dict[str, Any]]:
    """Start ``n`` browser sandboxes at once, run ``actions`` actions on each; one dict each."""
    return await run_probe_children("environments.browser.probe", "browser", n, actions)


def main(argv: list[str] | None = None) -> int:
    return probe_main("environments.browser.probe", "browser", _one_sandbox, argv)


if __name__ == "__main__":
    sys.exit(main())
