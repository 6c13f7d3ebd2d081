"""Chat messages out of recorded requests/responses, and token ids for calls that lack them.

The proxy stores the engine's token ids and never re-tokenizes when it has them (DESIGN §5).
Calls recorded without ids (an engine behind ``--engine URL`` that returns none) are
tokenized here with the policy tokenizer's chat template; such samples are flagged
``retokenized`` because the ids may differ from what the engine actually saw.

The three wire formats (OpenAI chat, OpenAI Responses, Anthropic Messages) are reduced to
OpenAI chat messages by small pure functions; only the fields that carry conversation
content are read.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from training.trajectory.records import RecordedCall

log = logging.getLogger(__name__)


def _text_of(content: Any) -> str:
    """Plain text of a content field: a string or a list of text-ish blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif block.get("type") == "tool_result":
                    parts.append(_text_of(block.get("content")))
        return "".join(parts)
    return str(content)


def _chat_tool_call(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True)
    return {"id": call_id or "", "type": "function", "function": {"name": name, "arguments": arguments}}


def _responses_input(request: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.get("instructions"):
        messages.append({"role": "system", "content": str(request["instructions"])})
    items = request.get("input")
    if isinstance(items, str):
        return messages + [{"role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            messages.append({"role": "system" if role == "developer" else role, "content": _text_of(item.get("content"))})
        elif kind == "function_call":
            messages.append(
                {"role": "assistant", "content": "", "tool_calls": [_chat_tool_call(item.get("call_id"), item.get("name", ""), item.get("arguments", ""))]}
            )
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id", ""), "content": _text_of(item.get("output"))})
    return messages


def _anthropic_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.get("system"):
        messages.append({"role": "system", "content": _text_of(request["system"])})
    for msg in request.get("messages") or []:
        role, content = msg.get("role", "user"), msg.get("content")
        if isinstance(content, list):
            uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            text = _text_of([b for b in content if not (isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result"))])
            for res in results:
                messages.append({"role": "tool", "tool_call_id": res.get("tool_use_id", ""), "content": _text_of(res.get("content"))})
            if uses:
                messages.append(
                    {"role": "assistant", "content": text, "tool_calls": [_chat_tool_call(u.get("id"), u.get("name", ""), u.get("input", {})) for u in uses]}
                )
            elif text or not results:
                messages.append({"role": role, "content": text})
        else:
            messages.append({"role": role, "content": _text_of(content)})
    return messages


def request_messages(api: str, request: dict[str, Any] | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``(messages, tools)`` of a recorded request, as OpenAI chat messages."""
    request = request or {}
    if api == "responses":
        messages = _responses_input(request)
    elif api == "messages":
        messages = _anthropic_messages(request)
    else:
        messages = [dict(m) for m in request.get("messages") or []]
    return messages, request.get("tools")


def response_message(api: str, response: dict[str, Any] | None) -> dict[str, Any]:
    """The assistant message of a recorded response, as an OpenAI chat message."""
    response = response or {}
    if api == "responses":
        text, calls = [], []
        for item in response.get("output") or []:
            if item.get("type") == "message":
                text.append(_text_of(item.get("content")))
            elif item.get("type") == "function_call":
                calls.append(_chat_tool_call(item.get("call_id"), item.get("name", ""), item.get("arguments", "")))
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    elif api == "messages":
        blocks = response.get("content") or []
        calls = [_chat_tool_call(b.get("id"), b.get("name", ""), b.get("input", {})) for b in blocks if b.get("type") == "tool_use"]
        msg = {"role": "assistant", "content": _text_of([b for b in blocks if b.get("type") == "text"])}
    else:
        choices = response.get("choices") or [{}]
        raw = dict(choices[0].get("message") or {})
        calls = list(raw.get("tool_calls") or [])
        msg = {"role": "assistant", "content": raw.get("content") or ""}
    if calls:
        msg["tool_calls"] = calls
    return msg


def action_key(message: dict[str, Any]) -> str:
    """A canonical string for the action an assistant message takes (for identical-action filters).

    Tool calls compare by name and parsed arguments (ids and key order ignored); a message
    without tool calls compares by its stripped text.
    """
    calls = message.get("tool_calls") or []
    if calls:
        canon = []
        for call in calls:
            fn = call.get("function") or {}
            args: Any = fn.get("arguments", "")
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = args.strip()
            canon.append([fn.get("name", ""), args])
        return "tool:" + json.dumps(canon, sort_keys=True)
    return "text:" + _text_of(message.get("content")).strip()


def _ids(encoded: Any) -> list[int]:
    if hasattr(encoded, "keys") and "input_ids" in encoded:
        encoded = encoded["input_ids"]
    if hasattr(encoded, "tolist"):
        encoded = encoded.tolist()
    if encoded and isinstance(encoded[0], list):
        encoded = encoded[0]
    return [int(t) for t in encoded]


def tokenize_call(call: RecordedCall, tokenizer: Any) -> tuple[list[int], list[int]]:
    """``(prompt_ids, response_ids)`` of a call rendered with the tokenizer's chat template."""
    messages, tools = request_messages(call.api, call.request)
    reply = response_message(call.api, call.response)
    kwargs: dict[str, Any] = {"tools": tools} if tools else {}
    prompt = _ids(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **kwargs))
    full = _ids(tokenizer.apply_chat_template(messages + [reply], tokenize=True, **kwargs))
    if len(full) > len(prompt) and full[: len(prompt)] == prompt:
        return prompt, full[len(prompt) :]
    # The template does not render the reply as an extension of the prompt: encode its text.
    text = reply.get("content") or ""
    if reply.get("tool_calls"):
        text += json.dumps([c.get("function") for c in reply["tool_calls"]])
    response = _ids(tokenizer(text, add_special_tokens=False))
    if tokenizer.eos_token_id is not None:
        response.append(int(tokenizer.eos_token_id))
    return prompt, response
