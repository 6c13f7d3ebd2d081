"""Actions and observations out of recorded model calls, whatever API the harness spoke.

A recorded call holds the harness's own request and response (OpenAI chat, OpenAI
Responses or Anthropic Messages). This module reads the tool calls the model made in
each response, and whether the tool results the harness sent back next were errors.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_ERROR_RE = re.compile(r'(^|\W)(error|exception|traceback|not found|invalid|failed)(\W|$)', re.IGNORECASE)
_TEXT_ACTION_RE = re.compile(r"Action:\s*(\{.*\})", re.DOTALL)


@dataclass(frozen=True)
class Action:
    tool: str
    arguments: Any  # parsed JSON, or the raw string when it did not parse
    well_formed: bool

    @property
    def key(self) -> str:
        """A canonical form used to spot repeated identical actions."""
        try:
            return f"{self.tool}:{json.dumps(self.arguments, sort_keys=True)}"
        except (TypeError, ValueError):
            return f"{self.tool}:{self.arguments!r}"


@dataclass
class Step:
    """One model call: the actions it took and what came back for them."""

    index: int
    actions: list[Action] = field(default_factory=list)
    text: str = ""
    tool_errors: int = 0  # errors reported in the tool results of the *previous* actions
    tool_results: int = 0


def _parse_args(raw: Any) -> tuple[Any, bool]:
    if isinstance(raw, dict):
        return raw, True
    if raw is None or raw == "":
        return {}, True
    try:
        return json.loads(raw), True
    except (TypeError, ValueError):
        return raw, False


def response_actions(api: str, response: dict[str, Any] | None) -> tuple[list[Action], str]:
    """Tool calls (and visible text) in one recorded response."""
    if not response:
        return [], ""
    actions: list[Action] = []
    texts: list[str] = []
    if api == "responses":
        for item in response.get("output", []) or []:
            if item.get("type") == "function_call":
                args, ok = _parse_args(item.get("arguments"))
                actions.append(Action(item.get("name", "?"), args, ok))
            elif item.get("type") == "message":
                texts += [c.get("text", "") for c in item.get("content", []) if isinstance(c, dict)]
    elif api == "messages":
        for block in response.get("content", []) or []:
            if block.get("type") == "tool_use":
                actions.append(Action(block.get("name", "?"), block.get("input", {}), True))
            elif block.get("type") == "text":
                texts.append(block.get("text", ""))
    else:
        choices = response.get("choices") or [{}]
        message = choices[0].get("message") or {}
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            args, ok = _parse_args(fn.get("arguments"))
            actions.append(Action(fn.get("name", "?"), args, ok))
        texts.append(message.get("content") or "")
    text = "\n".join(t for t in texts if t)
    if not actions:  # text-protocol harnesses (react without native tools)
        match = _TEXT_ACTION_RE.search(text)
        if match:
            args, ok = _parse_args(match.group(1))
            tool = args.get("tool", "?") if ok and isinstance(args, dict) else "?"
            actions.append(Action(tool, args.get("args", args) if ok and isinstance(args, dict) else args, ok))
    return actions, text


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_content_text(c.get("text") or c.get("content") or c.get("output") or "") if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else str(content)


def tool_results(api: str, request: dict[str, Any] | None) -> list[tuple[str, bool]]:
    """(text, is_error) of the tool results at the end of a request's history."""
    if not request:
        return []
    out: list[tuple[str, bool]] = []
    if api == "responses":
        items = request.get("input") if isinstance(request.get("input"), list) else []
        tail = []
        for item in reversed(items):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                tail.append(_content_text(item.get("output")))
            elif tail:
                break
        out = [(t, bool(_ERROR_RE.search(t))) for t in reversed(tail)]
    elif api == "messages":
        messages = request.get("messages") or []
        if messages and messages[-1].get("role") == "user" and isinstance(messages[-1].get("content"), list):
            for block in messages[-1]["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = _content_text(block.get("content"))
                    out.append((text, bool(block.get("is_error")) or bool(_ERROR_RE.search(text))))
    else:
        tail = []
        for message in reversed(request.get("messages") or []):
            if message.get("role") == "tool":
                tail.append(_content_text(message.get("content")))
            else:
                break
        out = [(t, bool(_ERROR_RE.search(t))) for t in reversed(tail)]
    return out


def trajectory_steps(calls: list[dict[str, Any]]) -> list[Step]:
    """One :class:`Step` per recorded call, in order."""
    steps: list[Step] = []
    for call in sorted(calls, key=lambda c: c["index"]):
        api = call.get("api", "chat")
        actions, text = response_actions(api, call.get("response"))
        results = tool_results(api, call.get("request"))
        steps.append(
            Step(call["index"], actions, text, tool_errors=sum(err for _, err in results), tool_results=len(results))
        )
    return steps
