"""The text action protocol for models without a native tool template.

The model answers with one line ``Action: {"tool": "<name>", "args": {...}}`` or with
``Final Answer: <text>``. Parsing is forgiving: code fences, ``name``/``action`` for the
tool key, ``arguments``/``input``/``parameters`` for the args key, args given as a JSON
string, a bare JSON object with a ``tool`` key. Anything else raises :class:`ParseError`,
whose message is fed back to the model as the observation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_ACTION = re.compile(r"action\s*:", re.IGNORECASE)
_FINAL = re.compile(r"final\s*answer\s*:", re.IGNORECASE)
_TOOL_KEYS = ("tool", "name", "action", "tool_name")
_ARG_KEYS = ("args", "arguments", "input", "parameters", "tool_input")


class ParseError(ValueError):
    """The reply holds no usable action; ``str(err)`` tells the model what to fix."""


@dataclass
class Action:
    tool: str
    args: dict[str, Any] = field(default_factory=dict)


def _objects_after(text: str, start: int) -> list[dict[str, Any]]:
    """Every JSON object that can be decoded starting at a ``{`` at or after ``start``."""
    decoder = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i = text.find("{", start)
    while i != -1:
        try:
            obj, _end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            out.append(obj)
            return out
        i = text.find("{", i + 1)
    return out


def _to_action(obj: dict[str, Any]) -> Action | None:
    tool = next((obj[k] for k in _TOOL_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if tool is None:
        return None
    args: Any = next((obj[k] for k in _ARG_KEYS if k in obj), {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ParseError(f"the args of tool {tool!r} are not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ParseError(f"the args of tool {tool!r} must be a JSON object, got {type(args).__name__}")
    return Action(tool=tool.strip(), args=args)


def is_final(text: str) -> bool:
    """True when the reply finishes the episode (a Final Answer and no Action)."""
    return bool(_FINAL.search(text or "")) and not _ACTION.search(text or "")


def parse_action(text: str) -> Action:
    """The first action in ``text``; raises :class:`ParseError` when there is none."""
    text = text or ""
    m = _ACTION.search(text)
    if m:
        objs = _objects_after(text, m.end())
        if not objs:
            raise ParseError('found "Action:" but no JSON object after it; write '
                             'Action: {"tool": "<name>", "args": {...}}')
        action = _to_action(objs[0])
        if action is None:
            raise ParseError('the Action JSON needs a "tool" field naming the tool to call')
        return action
    for obj in _objects_after(text, 0):
        action = _to_action(obj)
        if action is not None:
            return action
    raise ParseError('no action found. Reply with one line Action: {"tool": "<name>", "args": {...}} '
                     "or, when the task is done, Final Answer: <summary>")


def describe_tools(tools: list[dict[str, Any]]) -> str:
    """The tool list as text for the system prompt of the text protocol."""
    lines = []
    for t in tools:
        schema = json.dumps(t.get("input_schema") or {"type": "object"}, sort_keys=True)
        lines.append(f"- {t['name']}: {t.get('description', '').strip()}\n  args schema: {schema}")
    return "\n".join(lines)


TEXT_PROTOCOL = """To use a tool, reply with exactly one line:
Action: {{"tool": "<tool name>", "args": {{<arguments as JSON>}}}}
You will receive the result as "Observation: ...". Use one action per reply.
When the task is complete, reply with:
Final Answer: <short summary>

Tools:
{tools}"""
