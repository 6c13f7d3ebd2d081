"""The ReACT loop: ask the model, run the tool it chose, feed back the observation, repeat
until it stops calling tools, gives a Final Answer, or hits the step limit.

Modes: ``native`` (OpenAI ``tools``/``tool_calls``), ``text`` (the Action protocol of
:mod:`.protocol`), ``auto`` (native; falls back to text when the endpoint rejects ``tools``
on the first call, and parses ``Action:`` / ``<tool_call>`` text in a reply without tool calls).
Malformed actions/arguments are fed back as observations and counted. Engine 400s for
context overflow or malformed tool calls end the episode as ``policy_error``; connection
failures and 5xx (after the client's retries, :mod:`.chat_client`) as ``infra_error/engine_error``.
The trajectory is rewritten to ``<log_dir>/trajectory.json`` after every step.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.harnesses.base import FINAL_ANSWER_FILE
from environments.harnesses.react.chat_client import (
    BadRequest,
    ChatClient,
    ChatError,
    ChatMessage,
)
from environments.harnesses.react.protocol import (
    TEXT_PROTOCOL,
    ParseError,
    describe_tools,
    is_final,
    parse_action,
)
from environments.harnesses.react.tools import ToolBox

log = logging.getLogger(__name__)

_CONTEXT = re.compile(r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long"
                      r"|context_length_exceeded|input is too long", re.IGNORECASE)
_TOOLISH = re.compile(r"tool|function", re.IGNORECASE)
#: A reply without native tool calls that still tries to call one (text Action, or a Hermes
#: ``<tool_call>`` block the engine could not parse) is handled as a text action: parsed, or
#: fed back as malformed — never taken as the final answer.
_ACTION_HINT = re.compile(r"action\s*:|<tool_call>|<function[=>]", re.IGNORECASE)

SYSTEM = ("You are an autonomous agent. Your working directory is {workspace}. Complete the user's "
          "task by calling tools; inspect results before moving on. When the task is complete, "
          "stop calling tools and reply with a short summary.")


@dataclass
class ReactConfig:
    instruction: str
    base_url: str
    model: str
    workspace: Path
    log_dir: Path
    api_key: str = "openforge-no-token"
    tools: list[dict[str, Any]] = field(default_factory=list)
    services_url: str | None = None
    mode: str = "auto"  # auto | native | text
    max_steps: int = 30
    bash_timeout: float = 120.0
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    builtin_tools: bool = True  # offer bash / read_file / write_file besides the task's tools
    request_timeout: float = 600.0


@dataclass
class ReactResult:
    status: str  # finished | step_limit | policy_error | infra_error
    steps: int = 0
    n_calls: int = 0
    malformed: int = 0
    mode: str = "native"
    error_kind: str | None = None
    error: str | None = None
    final: str | None = None


def classify_bad_request(message: str) -> tuple[str, str]:
    """(status, error_kind) for an engine 400 with this message."""
    if _CONTEXT.search(message):
        return "policy_error", "context_overflow"
    if _TOOLISH.search(message) or "parse" in message.lower():
        return "policy_error", "malformed_tool_call"
    return "infra_error", "engine_error"


class _Episode:
    def __init__(self, cfg: ReactConfig) -> None:
        self.cfg = cfg
        self.box = ToolBox(cfg.workspace, cfg.tools, cfg.services_url, cfg.bash_timeout, builtin=cfg.builtin_tools)
        self.native = cfg.mode in ("auto", "native")
        self.result = ReactResult(status="step_limit", mode="native" if self.native else "text")
        self.messages: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self._reset_messages()

    def _reset_messages(self) -> None:
        system = SYSTEM.format(workspace=self.cfg.workspace)
        if not self.native:
            system += "\n\n" + TEXT_PROTOCOL.format(tools=describe_tools(self.box.specs))
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": self.cfg.instruction}]

    def save(self) -> None:
        self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
        doc = {"model": self.cfg.model, "mode": "native" if self.native else "text",
               "messages": self.messages, "steps": self.steps, "result": asdict(self.result)}
        (self.cfg.log_dir / "trajectory.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")

    async def _ask(self, client: ChatClient) -> list[ChatMessage]:
        kwargs: dict[str, Any] = {"model": self.cfg.model, "messages": self.messages}
        if self.native:
            kwargs["tools"] = self.box.openai_tools()
        if self.cfg.max_tokens is not None:
            kwargs["max_tokens"] = self.cfg.max_tokens
        if self.cfg.temperature is not None:
            kwargs["temperature"] = self.cfg.temperature
        if self.cfg.top_p is not None:
            kwargs["top_p"] = self.cfg.top_p
        self.result.n_calls += 1
        return await client.create(kwargs)

    async def _observe_text(self, content: str, step: int) -> None:
        try:
            action = parse_action(content)
        except ParseError as exc:
            self.result.malformed += 1
            obs = f"Error: {exc}"
            self.steps.append({"step": step, "kind": "malformed", "text": content, "observation": obs})
        else:
            obs = await self.box.call(action.tool, action.args)
            self.steps.append({"step": step, "kind": "action", "tool": action.tool, "args": action.args,
                               "observation": obs})
        self.messages.append({"role": "assistant", "content": content})
        self.messages.append({"role": "user", "content": f"Observation: {obs}"})

    async def _observe_native(self, message: ChatMessage, step: int) -> None:
        calls = message.tool_calls
        self.messages.append({"role": "assistant", "content": message.content or "",
                              "tool_calls": [c.raw for c in calls]})
        for call in calls:
            name = call.name
            raw = call.arguments or "{}"
            try:
                args = json.loads(raw) if raw.strip() else {}
                problem = None if isinstance(args, dict) else f"expected a JSON object, got {type(args).__name__}"
            except ValueError as exc:
                problem = str(exc)
            if problem is not None:
                self.result.malformed += 1
                obs = f"Error: the arguments of {name} are not a valid JSON object ({problem}); call the tool again."
                self.steps.append({"step": step, "kind": "malformed", "tool": name, "arguments": raw,
                                   "observation": obs})
            else:
                obs = await self.box.call(name, args)
                self.steps.append({"step": step, "kind": "action", "tool": name, "args": args, "observation": obs})
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})

    async def run(self) -> ReactResult:
        client = ChatClient(self.cfg.base_url, self.cfg.api_key, max_retries=2, timeout=self.cfg.request_timeout)
        try:
            step = 0
            while step < self.cfg.max_steps:
                try:
                    choices = await self._ask(client)
                except BadRequest as exc:
                    msg = str(exc)
                    if (self.native and self.cfg.mode == "auto" and self.result.n_calls == 1
                            and _TOOLISH.search(msg) and not _CONTEXT.search(msg)):
                        log.info("endpoint rejected native tools (%s); switching to the text protocol", msg)
                        self.native = False
                        self.result.mode = "text"
                        self._reset_messages()
                        continue
                    self.result.status, self.result.error_kind = classify_bad_request(msg)
                    self.result.error = msg[:2000]
                    return self.result
                except ChatError as exc:
                    self.result.status, self.result.error_kind = "infra_error", "engine_error"
                    self.result.error = f"{type(exc).__name__}: {exc}"[:2000]
                    return self.result
                step += 1
                self.result.steps = step
                if not choices:
                    self.result.status, self.result.error_kind = "infra_error", "engine_error"
                    self.result.error = "engine returned no choices"
                    return self.result
                message = choices[0]
                content = message.content or ""
                if self.native and message.tool_calls:
                    await self._observe_native(message, step)
                elif self.native and not _ACTION_HINT.search(content) or not self.native and is_final(content):
                    self.messages.append({"role": "assistant", "content": content})
                    self.result.status, self.result.final = "finished", content
                    self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
                    (self.cfg.log_dir / FINAL_ANSWER_FILE).write_text(content, encoding="utf-8")
                    return self.result
                else:
                    await self._observe_text(content, step)
                self.save()
            self.result.status = "step_limit"
            return self.result
        finally:
            self.save()
            await self.box.aclose()
            await client.aclose()


async def run_react(cfg: ReactConfig) -> ReactResult:
    """Run one episode; never raises for model or engine failures (see :class:`ReactResult`)."""
    return await _Episode(cfg).run()
