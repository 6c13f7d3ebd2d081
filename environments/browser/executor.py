"""Execute one browser action on a :class:`~environments.browser.session.BrowserSession`.

The same code runs the model's actions (browser-use harness) and the oracle's
(:mod:`environments.browser.replay`), so the action layer is tested end to end. Every action
has a time limit; failures (bad coordinates, unknown tab, navigation errors, timeouts)
become an :class:`ActionResult` with ``ok=False`` and a one-line message for the model —
never an exception.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

from environments.browser.actions import (
    Action,
    Answer,
    Click,
    Drag,
    GoBack,
    Goto,
    HScroll,
    Key,
    MouseMove,
    NewTab,
    Scroll,
    TabFocus,
    Terminate,
    Type,
    Wait,
)
from environments.browser.session import BrowserSession

log = logging.getLogger(__name__)

#: Model spellings of key names → Playwright's.
_KEY_NAMES = {
    "enter": "Enter", "return": "Enter", "esc": "Escape", "escape": "Escape", "tab": "Tab", "space": "Space",
    "backspace": "Backspace", "delete": "Delete", "del": "Delete", "up": "ArrowUp", "down": "ArrowDown",
    "left": "ArrowLeft", "right": "ArrowRight", "arrowup": "ArrowUp", "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft", "arrowright": "ArrowRight", "pageup": "PageUp", "pagedown": "PageDown",
    "page_up": "PageUp", "page_down": "PageDown", "home": "Home", "end": "End", "ctrl": "Control",
    "control": "Control", "alt": "Alt", "shift": "Shift", "cmd": "Meta", "meta": "Meta", "super": "Meta",
    "win": "Meta", "command": "Meta", "option": "Alt",
}


@dataclass
class ActionResult:
    ok: bool
    message: str
    done: bool = False  # terminate / answer end the episode
    status: str | None = None  # terminate's status
    answer: str | None = None


def normalise_keys(keys: str | list[str]) -> str:
    """``["ctrl", "a"]`` / ``"ctrl+a"`` / ``"Enter"`` → Playwright's ``Control+a`` / ``Enter``."""
    parts = keys if isinstance(keys, list) else re.split(r"\s*\+\s*", keys.strip())
    out = []
    for part in parts:
        part = str(part).strip()
        if not part:
            continue
        mapped = _KEY_NAMES.get(part.lower())
        if mapped is None and re.fullmatch(r"[fF]\d{1,2}", part):
            mapped = part.upper()
        out.append(mapped or (part if len(part) == 1 else part[0].upper() + part[1:]))
    if not out:
        raise ValueError("no key given")
    return "+".join(out)


def normalise_url(url: str) -> str:
    url = url.strip()
    return url if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) else "http://" + url


class ActionExecutor:
    """Runs actions on ``browser`` with a per-action time limit (seconds)."""

    def __init__(self, browser: BrowserSession, *, action_timeout: float = 15.0, settle_timeout: float = 5.0,
                 settle_grace: float = 0.15, final_grace: float = 0.5) -> None:
        self.browser = browser
        self.action_timeout = action_timeout
        self.settle_timeout = settle_timeout
        self.settle_grace = settle_grace
        self.final_grace = final_grace  # before an episode ends: let a last form submission land

    def _check_point(self, x: float, y: float) -> None:
        width, height = self.browser.config.viewport
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"({x:g}, {y:g}) is outside the {width}×{height} viewport")

    async def _settle(self, grace: float | None = None) -> None:
        """Let a navigation the action started reach the server and DOMContentLoaded (bounded)."""
        await self.browser.settle(self.settle_grace if grace is None else grace, self.settle_timeout)

    async def execute(self, action: Action) -> ActionResult:
        try:
            return await asyncio.wait_for(self._run(action), self.action_timeout)
        except TimeoutError:
            return ActionResult(False, f"{action.describe()} timed out after {self.action_timeout:g}s")
        except (ValueError, IndexError) as exc:
            return ActionResult(False, f"{action.describe()} failed: {exc}")
        except Exception as exc:  # noqa: BLE001 - playwright errors are feedback, not crashes
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return ActionResult(False, f"{action.describe()} failed: {first}")

    async def _run(self, a: Action) -> ActionResult:
        b = self.browser
        mouse = b.page.mouse
        if isinstance(a, Click):
            self._check_point(a.x, a.y)
            await mouse.click(a.x, a.y, button=a.button, click_count=a.clicks)
            await self._settle()
            return ActionResult(True, f"clicked at ({a.x:g}, {a.y:g})")
        if isinstance(a, MouseMove):
            self._check_point(a.x, a.y)
            await mouse.move(a.x, a.y)
            return ActionResult(True, f"moved the mouse to ({a.x:g}, {a.y:g})")
        if isinstance(a, Drag):
            self._check_point(a.x, a.y)
            self._check_point(a.to_x, a.to_y)
            await mouse.move(a.x, a.y)
            await mouse.down()
            await mouse.move(a.to_x, a.to_y, steps=12)
            await mouse.up()
            return ActionResult(True, f"dragged from ({a.x:g}, {a.y:g}) to ({a.to_x:g}, {a.to_y:g})")
        if isinstance(a, Type):
            await b.page.keyboard.type(a.text)
            return ActionResult(True, f"typed {len(a.text)} characters")
        if isinstance(a, Key):
            combo = normalise_keys(a.keys)
            await b.page.keyboard.press(combo)
            await self._settle()
            return ActionResult(True, f"pressed {combo}")
        if isinstance(a, (Scroll, HScroll)):
            width, height = b.config.viewport
            x, y = (a.x if a.x is not None else width / 2), (a.y if a.y is not None else height / 2)
            self._check_point(x, y)
            await mouse.move(x, y)
            dx, dy = (a.amount, 0) if isinstance(a, HScroll) else (0, a.amount)
            await mouse.wheel(dx, dy)
            await asyncio.sleep(0.15)  # wheel scrolling is asynchronous in Chromium
            return ActionResult(True, f"scrolled {'horizontally ' if dx else ''}by {a.amount:g}px")
        if isinstance(a, Goto):
            url = normalise_url(a.url)
            response = await b.page.goto(url, wait_until="domcontentloaded")
            code = f" (HTTP {response.status})" if response is not None else ""
            return ActionResult(True, f"opened {url}{code}")
        if isinstance(a, GoBack):
            response = await b.page.go_back(wait_until="domcontentloaded")
            return ActionResult(True, "went back" if response is not None else "no previous page in this tab")
        if isinstance(a, NewTab):
            page = await b.new_tab()
            if a.url:
                await page.goto(normalise_url(a.url), wait_until="domcontentloaded")
            return ActionResult(True, f"opened tab {b.active}" + (f" at {a.url}" if a.url else ""))
        if isinstance(a, TabFocus):
            await b.focus(a.index)
            return ActionResult(True, f"switched to tab {a.index}")
        if isinstance(a, Wait):
            await asyncio.sleep(min(a.seconds, max(self.action_timeout - 0.5, 0)))
            return ActionResult(True, f"waited {a.seconds:g}s")
        if isinstance(a, (Terminate, Answer)):
            await self._settle(self.final_grace)
        if isinstance(a, Terminate):
            return ActionResult(True, f"terminated ({a.status})", done=True, status=a.status)
        if isinstance(a, Answer):
            return ActionResult(True, "answer recorded", done=True, status="answered", answer=a.text)
        raise ValueError(f"unsupported action {a!r}")  # pragma: no cover - the union is exhaustive


async def page_facts(browser: BrowserSession) -> dict[str, Any]:
    """Title, URL and tab list of the browser, for the observation text."""
    tabs = await browser.tabs()
    title, url = tabs[browser.active] if tabs else ("", "")
    return {"title": title, "url": url, "tabs": tabs, "active": browser.active}
