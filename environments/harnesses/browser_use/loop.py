"""The browser-use episode (MolmoWeb-style): screenshot + text in, one JSON action out.

Each step the model gets the current screenshot (an OpenAI ``image_url`` part, through the
proxy) and a text block — the previous action and its result, the page title, URL, open
tabs and the step count — and replies with one JSON action of
:mod:`environments.browser.actions`. The action runs on the browser through the shared
:class:`~environments.browser.executor.ActionExecutor`; a reply that does not parse is
reported back as the action's result and counted as malformed. The episode ends on
``terminate``, on ``answer`` (its text goes to ``<logs>/answer.txt``), at the step cap
(30), or at the task deadline. Screenshots are saved as PNGs under ``<logs>/screenshots``;
the trajectory is rewritten to ``<logs>/trajectory.json`` after every step. Older
screenshots in the chat history are replaced by a placeholder (``keep_images`` latest kept).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from environments.browser.actions import ActionParseError, parse_action
from environments.browser.answer import write_answer
from environments.browser.executor import ActionExecutor, page_facts
from environments.browser.session import (
    BrowserConfig,
    BrowserSession,
    BrowserStartError,
)
from environments.gui.observation import image_part, save_screenshot, text_part
from environments.harnesses.browser_use.prompt import observation_text, system_prompt
from environments.harnesses.react.loop import classify_bad_request

log = logging.getLogger(__name__)

OMITTED = "(earlier screenshot omitted)"


@dataclass
class BrowserUseConfig:
    instruction: str
    base_url: str
    model: str
    log_dir: Path
    api_key: str = "openforge-no-token"
    browser: BrowserConfig = field(default_factory=BrowserConfig)
    start_url: str | None = None
    max_steps: int = 30
    action_timeout: float = 15.0
    task_timeout: float = 1200.0
    request_timeout: float = 300.0
    max_tokens: int | None = 512
    temperature: float | None = None
    keep_images: int = 1
    save_screenshots: bool = True


@dataclass
class BrowserUseResult:
    status: str  # terminated | answered | step_limit | timeout | policy_error | infra_error
    steps: int = 0
    n_calls: int = 0
    malformed: int = 0
    failed_actions: int = 0
    terminate_status: str | None = None
    answer: str | None = None
    error_kind: str | None = None
    error: str | None = None
    screenshots: int = 0


class _Episode:
    def __init__(self, cfg: BrowserUseConfig) -> None:
        self.cfg = cfg
        self.result = BrowserUseResult(status="step_limit")
        width, height = cfg.browser.viewport
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(width, height, cfg.max_steps)},
            {"role": "user", "content": f"Task: {cfg.instruction.strip()}"},
        ]
        self.steps: list[dict[str, Any]] = []
        self.started = time.monotonic()

    def save(self) -> None:
        self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
        doc = {"model": self.cfg.model, "messages": _without_images(self.messages), "steps": self.steps,
               "result": asdict(self.result)}
        (self.cfg.log_dir / "trajectory.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")

    def _observe(self, step: int, previous: str | None, facts: dict[str, Any], png: bytes) -> None:
        """Append this step's observation; drop images beyond the newest ``keep_images``."""
        text = observation_text(step=step, max_steps=self.cfg.max_steps, previous=previous, facts=facts)
        self.messages.append({"role": "user", "content": [text_part(text), image_part(png)]})
        seen = 0
        for msg in reversed(self.messages):
            content = msg.get("content")
            if not isinstance(content, list):
                continue
            parts = []
            for part in content:
                if part.get("type") == "image_url":
                    seen += 1
                    if seen > self.cfg.keep_images:
                        part = text_part(OMITTED)
                parts.append(part)
            msg["content"] = parts

    async def _ask(self, client: AsyncOpenAI) -> str:
        kwargs: dict[str, Any] = {"model": self.cfg.model, "messages": self.messages}
        if self.cfg.max_tokens is not None:
            kwargs["max_tokens"] = self.cfg.max_tokens
        if self.cfg.temperature is not None:
            kwargs["temperature"] = self.cfg.temperature
        self.result.n_calls += 1
        resp = await client.chat.completions.create(**kwargs)
        if not resp.choices:
            raise _EngineFailure("engine returned no choices")
        return resp.choices[0].message.content or ""

    async def run(self) -> BrowserUseResult:
        client = AsyncOpenAI(base_url=self.cfg.base_url, api_key=self.cfg.api_key, max_retries=2,
                             timeout=self.cfg.request_timeout)
        browser = BrowserSession(self.cfg.browser)
        try:
            try:
                await browser.start()
            except BrowserStartError as exc:
                self.result.status, self.result.error_kind, self.result.error = "infra_error", "browser_failed", str(exc)
                return self.result
            executor = ActionExecutor(browser, action_timeout=self.cfg.action_timeout)
            previous: str | None = None
            if self.cfg.start_url:
                from environments.browser.actions import Goto

                opened = await executor.execute(Goto(action="goto", url=self.cfg.start_url))
                previous = f"(start) {opened.message}"
            deadline = self.started + self.cfg.task_timeout
            for step in range(1, self.cfg.max_steps + 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.result.status = "timeout"
                    return self.result
                try:
                    if not browser.pages:  # the page closed its last tab (window.close())
                        await browser.new_tab()
                    png = await browser.screenshot()
                except Exception as exc:  # noqa: BLE001 - a crashed browser ends the episode as infra
                    self.result.status, self.result.error_kind = "infra_error", "browser_failed"
                    self.result.error = f"screenshot failed: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                    return self.result
                if self.cfg.save_screenshots:
                    save_screenshot(self.cfg.log_dir, step, png)
                    self.result.screenshots += 1
                facts = await page_facts(browser)
                self._observe(step, previous, facts, png)
                try:
                    reply = await asyncio.wait_for(self._ask(client), remaining)
                except TimeoutError:
                    self.result.status = "timeout"
                    return self.result
                except openai.BadRequestError as exc:
                    self.result.status, self.result.error_kind = classify_bad_request(str(exc))
                    self.result.error = str(exc)[:2000]
                    return self.result
                except (openai.APIConnectionError, openai.APIStatusError, _EngineFailure) as exc:
                    self.result.status, self.result.error_kind = "infra_error", "engine_error"
                    self.result.error = f"{type(exc).__name__}: {exc}"[:2000]
                    return self.result
                self.result.steps = step
                self.messages.append({"role": "assistant", "content": reply})
                record: dict[str, Any] = {"step": step, "url": facts["url"], "title": facts["title"], "reply": reply}
                try:
                    action = parse_action(reply)
                except ActionParseError as exc:
                    self.result.malformed += 1
                    previous = f"your reply was not a valid action: {exc}"
                    record.update(kind="malformed", result=previous)
                    self.steps.append(record)
                    self.save()
                    continue
                outcome = await executor.execute(action)
                if not outcome.ok:
                    self.result.failed_actions += 1
                previous = f"{action.describe()} → {outcome.message}"
                record.update(kind="action", action=action.model_dump(), ok=outcome.ok, result=outcome.message)
                self.steps.append(record)
                if outcome.answer is not None:
                    write_answer(self.cfg.log_dir, outcome.answer)
                    self.result.answer = outcome.answer
                if outcome.done:
                    self.result.status = "answered" if outcome.answer is not None else "terminated"
                    self.result.terminate_status = outcome.status
                    return self.result
                self.save()
            self.result.status = "step_limit"
            return self.result
        finally:
            self.save()
            await browser.close()
            await client.close()


class _EngineFailure(RuntimeError):
    """The engine answered without a usable choice."""


def _without_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat history with image parts replaced by a marker (the PNGs are on disk)."""
    out = []
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, list):
            content = [p if p.get("type") != "image_url" else {"type": "image_url", "image_url": "<screenshot>"} for p in content]
        out.append({**msg, "content": content})
    return out


async def run_browser_use(cfg: BrowserUseConfig) -> BrowserUseResult:
    """Run one episode; never raises for model, engine or browser failures."""
    return await _Episode(cfg).run()
