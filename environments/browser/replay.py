"""The oracle of a browser task: replay ``solution/actions.json`` through the same
:class:`~environments.browser.executor.ActionExecutor` the browser-use harness uses.

A step is a Table A3 action (``{"action": "type", "text": "..."}``). Pointer actions may
name their target instead of coordinates: ``{"action": "click", "target": "#add-to-cart"}``
(a CSS selector) is resolved at replay time to the centre of the element's box; an
element outside the viewport is first brought into view with ``scroll`` actions — all
executed by the executor, so what runs is exactly what a model could have sent.

``python -m environments.browser.replay ACTIONS_JSON [--sites-url URL] [--logs-dir DIR]``
(env fallbacks ``CLAW_URL``, ``LOGS_DIR``); exit 1 when an action fails. With a logs dir,
the screen before the first step and after each step is saved as
``<logs-dir>/screenshots/step_NNN.png`` (the harness's layout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from environments.browser.actions import (
    Action,
    ActionParseError,
    Scroll,
    action_from_dict,
)
from environments.browser.answer import write_answer
from environments.browser.executor import ActionExecutor, ActionResult
from environments.browser.session import BrowserConfig, BrowserSession
from environments.gui.observation import save_screenshot

log = logging.getLogger(__name__)

#: Scroll steps allowed to bring one target into view.
MAX_SCROLLS = 8


class ReplayError(RuntimeError):
    """A solution step could not be resolved or failed when executed."""


async def _box_centre(browser: BrowserSession, selector: str, timeout: float) -> tuple[float, float]:
    loc = browser.page.locator(selector).first
    try:
        await loc.wait_for(state="visible", timeout=timeout * 1000)
    except Exception as exc:
        raise ReplayError(f"target {selector!r} not visible on {browser.page.url}") from exc
    box = await loc.bounding_box()
    if box is None:
        raise ReplayError(f"target {selector!r} has no box on {browser.page.url}")
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


async def resolve(step: dict[str, Any], browser: BrowserSession, executor: ActionExecutor,
                  timeout: float = 10.0) -> tuple[Action, list[tuple[Action, ActionResult]]]:
    """The concrete action for ``step`` and the scroll actions executed to reach its target."""
    data = dict(step)
    target = data.pop("target", None)
    scrolled: list[tuple[Action, ActionResult]] = []
    if target is not None:
        width, height = browser.config.viewport
        for _ in range(MAX_SCROLLS + 1):
            x, y = await _box_centre(browser, target, timeout)
            if 0 <= y < height and 0 <= x < width:
                break
            scroll = Scroll(action="scroll", amount=round(y - height / 2))
            scrolled.append((scroll, await executor.execute(scroll)))
        else:
            raise ReplayError(f"target {target!r} stayed outside the viewport after {MAX_SCROLLS} scrolls")
        data.update(x=round(x), y=round(y))
    try:
        return action_from_dict(data), scrolled
    except ActionParseError as exc:
        raise ReplayError(f"bad solution step {step}: {exc}") from None


async def _snap(browser: BrowserSession, agent_logs: Path, step: int) -> None:
    """Save the active tab as ``screenshots/step_NNN.png``; a failed screenshot is only logged."""
    try:
        save_screenshot(agent_logs, step, await browser.screenshot())
    except Exception as exc:  # noqa: BLE001 - a screenshot never fails the oracle
        log.warning("screenshot %d failed: %s", step, str(exc).strip().splitlines()[0] if str(exc).strip() else exc)


async def replay(steps: list[dict[str, Any]], browser: BrowserSession, *, agent_logs: Path | None = None,
                 action_timeout: float = 15.0) -> list[dict[str, Any]]:
    """Run ``steps``; returns the executed actions with their results. Raises ReplayError."""
    executor = ActionExecutor(browser, action_timeout=action_timeout)
    done: list[dict[str, Any]] = []
    if agent_logs is not None:
        await _snap(browser, agent_logs, 0)
    for i, step in enumerate(steps):
        action, scrolled = await resolve(step, browser, executor)
        results = [*scrolled, (action, await executor.execute(action))]
        for act, res in results:
            done.append({"step": i, "action": act.model_dump(), "ok": res.ok, "result": res.message})
            if not res.ok:
                raise ReplayError(f"step {i} {act.describe()}: {res.message}")
        result = results[-1][1]
        if agent_logs is not None:
            await _snap(browser, agent_logs, i + 1)
        if result.answer is not None and agent_logs is not None:
            write_answer(agent_logs, result.answer)
        if result.done:
            break
    return done


def load_steps(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("actions") if isinstance(data, dict) else data
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ReplayError(f"{path}: expected a list of action objects (or {{\"actions\": [...]}})")
    return steps


async def _main(ns: argparse.Namespace) -> int:
    steps = load_steps(ns.actions)
    agent_logs = Path(ns.logs_dir) if ns.logs_dir else None
    cfg = BrowserConfig.from_env(sites_url=ns.sites_url)
    async with BrowserSession(cfg) as browser:
        try:
            done = await replay(steps, browser, agent_logs=agent_logs)
        except ReplayError as exc:
            log.error("replay failed: %s", exc)
            return 1
    for d in done:
        log.info("step %d: %s -> %s", d["step"], d["action"], d["result"])
    if agent_logs is not None:
        agent_logs.mkdir(parents=True, exist_ok=True)
        (agent_logs / "oracle-replay.json").write_text(json.dumps(done, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="replay %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m environments.browser.replay")
    p.add_argument("actions", type=Path)
    p.add_argument("--sites-url", default=os.environ.get("CLAW_URL"))
    default_logs = os.path.join(os.environ["LOGS_DIR"], "agent") if os.environ.get("LOGS_DIR") else None
    p.add_argument("--logs-dir", default=default_logs, help="agent log dir (answer.txt goes here)")
    return asyncio.run(_main(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
