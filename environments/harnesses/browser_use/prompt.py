"""The browser-use harness's words: the system prompt (action space) and the per-step text
block (previous action result, page title, URL, tabs, step count)."""

from __future__ import annotations

from typing import Any

SYSTEM = """You are a web-browsing agent. You see a screenshot of a Chromium browser ({width}x{height} pixels, \
origin at the top-left) and a short description of the page. Complete the user's task by acting on the page.

Reply with exactly ONE action as a JSON object (you may think briefly before it). Actions:
{{"action": "click", "x": X, "y": Y}}                      click at pixel (X, Y); optional "button": "left"|"right"|"middle", "clicks": 1-3
{{"action": "mouse_move", "x": X, "y": Y}}                 move the mouse
{{"action": "drag", "x": X, "y": Y, "to_x": X2, "to_y": Y2}} drag with the left button held
{{"action": "type", "text": "..."}}                        type into the focused field (click the field first)
{{"action": "key", "keys": "Enter"}}                       press keys, e.g. "Enter", "Tab", "Control+a", "Backspace"
{{"action": "scroll", "amount": 400}}                      scroll down (negative: up) by pixels
{{"action": "hscroll", "amount": 400}}                     scroll right (negative: left) by pixels
{{"action": "goto", "url": "http://..."}}                  open a URL in this tab
{{"action": "go_back"}}                                    go back in this tab's history
{{"action": "new_tab", "url": "http://..."}}               open a new tab (url optional)
{{"action": "tab_focus", "index": 0}}                      switch to tab N
{{"action": "wait", "seconds": 1}}                         wait for the page
{{"action": "answer", "text": "..."}}                      give your final answer to the user (ends the task)
{{"action": "terminate", "status": "success"}}             stop: "success" when the task is done, "failure" if impossible

You have at most {max_steps} actions."""


def system_prompt(width: int, height: int, max_steps: int) -> str:
    return SYSTEM.format(width=width, height=height, max_steps=max_steps)


def observation_text(*, step: int, max_steps: int, previous: str | None, facts: dict[str, Any]) -> str:
    tabs = facts.get("tabs") or []
    tab_line = " | ".join(f"[{i}] {t or '(untitled)'}{' (active)' if i == facts.get('active') else ''}"
                          for i, (t, _) in enumerate(tabs))
    return (f"Step {step} of {max_steps}.\n"
            f"Previous action: {previous or 'none yet'}\n"
            f"Page title: {facts.get('title') or '(untitled)'}\n"
            f"URL: {facts.get('url') or 'about:blank'}\n"
            f"Tabs: {tab_line or '(none)'}\n"
            "Reply with one JSON action.")
