"""Hermes-style tool calls for the local engine: prompt fallback and output parsing.

The model calls a tool by writing ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
(one block per call). :func:`parse_tool_calls` turns such output into OpenAI
``message.tool_calls``; anything unparsable stays plain content, which is a policy error
for the harness to notice, not an engine error.

For chat templates that know nothing about tools (a plain ChatML template, for
instance), :func:`inline_tools` rewrites an OpenAI message list so that the template can
render it: the tool schemas are appended to the system turn, earlier assistant tool calls
become ``<tool_call>`` text and tool results become user turns wrapped in
``<tool_response>``.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from training.engines.local.chat_template import TOOLS_POSTAMBLE, TOOLS_PREAMBLE

_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_tool_calls(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Split model output into ``(content, tool_calls)``.

    Returns ``(text, [])`` unless every ``<tool_call>`` block holds a JSON object with a
    string ``name`` and object (or JSON-string) ``arguments``; a final block whose closing
    tag is missing (generation stopped on end-of-turn) is accepted. Content is the text
    outside the blocks, ``None`` when empty.
    """
    if "<tool_call>" not in text:
        return text, []
    calls: list[dict[str, Any]] = []
    for match in _TOOL_CALL_RE.finditer(text):
        try:
            payload = json.loads(match.group(1))
        except ValueError:
            return text, []
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            return text, []
        arguments = payload.get("arguments", payload.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return text, []
        if not isinstance(arguments, dict):
            return text, []
        calls.append(
            {
                "id": _call_id(),
                "type": "function",
                "function": {"name": payload["name"], "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        )
    if not calls:
        return text, []
    content = _TOOL_CALL_RE.sub("", text).strip()
    return (content or None), calls


def template_supports_tools(chat_template: str | None) -> bool:
    """Whether a Jinja chat template renders ``tools`` and assistant ``tool_calls`` itself."""
    return bool(chat_template) and "tools" in chat_template and "tool_calls" in chat_template


def describe_tools(tools: list[dict[str, Any]]) -> str:
    """The system-prompt text that lists ``tools`` and the call format (template fallback)."""
    lines = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
    return TOOLS_PREAMBLE + lines + TOOLS_POSTAMBLE


def _call_text(call: dict[str, Any]) -> str:
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # replayed verbatim below
    args_text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return '<tool_call>\n{"name": ' + json.dumps(function.get("name", "")) + ', "arguments": ' + args_text + "}\n</tool_call>"


def inline_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Rewrite tool schemas, tool calls and tool results as plain-text system/assistant/user turns."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        content = message.get("content") or ""
        if role == "assistant" and message.get("tool_calls"):
            parts = ([content] if content else []) + [_call_text(call) for call in message["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"})
        else:
            out.append({"role": role, "content": content})
    if tools:
        description = describe_tools(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{description}"}
        else:
            out.insert(0, {"role": "system", "content": description})
    return out
