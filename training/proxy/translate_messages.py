"""Anthropic Messages API ⇄ Chat Completions, as pure functions (no I/O).

:func:`messages_to_chat` turns a ``POST /v1/messages`` body into the chat body sent to the
engine; :func:`chat_to_messages` turns the engine's answer back into a Message;
:func:`messages_stream_events` replays a Message as the SSE sequence Anthropic streams
(``message_start``, ``content_block_start``/``_delta``/``_stop``, ``message_delta``,
``message_stop``).

Accepted although not plain Messages: ``role: "system"`` entries inside ``messages`` (Claude
Code sends them), ``thinking``, ``context_management``, ``cache_control``, ``metadata``,
beta flags. ``tool_result`` blocks become chat ``tool`` messages placed right after the
assistant turn; thinking blocks and hosted tools (web_search, …) are dropped.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from training.proxy.errors import ProxyError
from training.proxy.wire import new_id

log = logging.getLogger(__name__)

_STOP_REASON = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
    raise ProxyError(400, f"message content must be a string or a list of blocks, got {type(content).__name__}",
                     param="messages")


def _text(blocks: list[dict[str, Any]]) -> str:
    return "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    src = block.get("source") or {}
    if src.get("type") == "base64":
        url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
    else:
        url = src.get("url", "")
    return {"type": "image_url", "image_url": {"url": url}}


def _user_content(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if not any(b.get("type") == "image" for b in blocks):
        return _text(blocks)
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text":
            parts.append({"type": "text", "text": str(b.get("text", ""))})
        elif b.get("type") == "image":
            parts.append(_image_part(b))
    return parts


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    text = content if isinstance(content, str) else _text(_blocks(content))
    if block.get("is_error"):
        return f"Error: {text}" if text else "Error"
    return text


def _system_text(system: Any) -> str:
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict) and b.get("type", "text") == "text")


def _tools_to_chat(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        if "input_schema" not in tool and tool.get("type") not in (None, "custom"):
            log.debug("dropping hosted Anthropic tool of type %r", tool.get("type"))
            continue
        fn: dict[str, Any] = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object", "properties": {}}}
        if tool.get("description"):
            fn["description"] = tool["description"]
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice_to_chat(choice: dict[str, Any]) -> Any:
    kind = choice.get("type")
    if kind == "any":
        return "required"
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name", "")}}
    if kind == "none":
        return "none"
    return "auto"


def messages_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages request body → the chat body for the engine."""
    if not isinstance(body.get("messages"), list):
        raise ProxyError(400, "messages: field required (a list)", param="messages")
    if body.get("max_tokens") is None:
        raise ProxyError(400, "max_tokens: field required", param="max_tokens")
    messages: list[dict[str, Any]] = []
    system = _system_text(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for i, msg in enumerate(body["messages"]):
        if not isinstance(msg, dict):
            raise ProxyError(400, f"messages.{i}: must be an object", param=f"messages.{i}")
        role = msg.get("role")
        blocks = _blocks(msg.get("content"))
        if role == "system":
            messages.append({"role": "system", "content": _text(blocks)})
        elif role == "assistant":
            text = _text(blocks)
            calls = [
                {"id": b.get("id") or new_id("toolu_"), "type": "function",
                 "function": {"name": b.get("name", ""), "arguments": orjson.dumps(b.get("input") or {}).decode()}}
                for b in blocks if b.get("type") == "tool_use"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        elif role == "user":
            for b in blocks:
                if b.get("type") == "tool_result":
                    messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": _tool_result_text(b)})
            rest = [b for b in blocks if b.get("type") in ("text", "image")]
            if rest or not any(b.get("type") == "tool_result" for b in blocks):
                messages.append({"role": "user", "content": _user_content(rest)})
        else:
            raise ProxyError(400, f"messages.{i}.role: unsupported role {role!r}", param=f"messages.{i}.role")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages, "max_tokens": body["max_tokens"]}
    if body.get("tools"):
        tools = _tools_to_chat(body["tools"])
        if tools:
            chat["tools"] = tools
            choice = body.get("tool_choice")
            if isinstance(choice, dict):
                chat["tool_choice"] = _tool_choice_to_chat(choice)
                if choice.get("disable_parallel_tool_use"):
                    chat["parallel_tool_calls"] = False
    for key in ("temperature", "top_p", "top_k"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("stop_sequences"):
        chat["stop"] = list(body["stop_sequences"])
    return chat


def chat_to_messages(chat: dict[str, Any], request: dict[str, Any], *, message_id: str | None = None) -> dict[str, Any]:
    """The engine's chat completion → an Anthropic Message for ``request``."""
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = orjson.loads(fn.get("arguments") or "{}")
        except orjson.JSONDecodeError:
            args = None
        if not isinstance(args, dict):
            # A malformed call is the policy's output: hand it back as text, never invent input.
            content.append({"type": "text", "text": f"{fn.get('name', '')}({fn.get('arguments', '')})"})
            continue
        call_id = call.get("id") or new_id("toolu_")
        content.append({"type": "tool_use", "id": call_id, "name": fn.get("name", ""), "input": args})
    finish = choice.get("finish_reason")
    stop_reason = _STOP_REASON.get(finish or "stop", "end_turn")
    has_tool_use = any(b["type"] == "tool_use" for b in content)
    if has_tool_use:
        stop_reason = "tool_use"
    elif stop_reason == "tool_use":  # every call was malformed: no tool_use block to answer
        stop_reason = "end_turn"
    stop_sequence = None
    if finish == "stop" and choice.get("stop_reason") in (request.get("stop_sequences") or []):
        stop_reason, stop_sequence = "stop_sequence", choice["stop_reason"]
    usage = chat.get("usage") or {}
    return {
        "id": message_id or new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or chat.get("model"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {
            "input_tokens": int(usage.get("prompt_tokens") or 0),
            "output_tokens": int(usage.get("completion_tokens") or 0),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def messages_stream_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A complete Message → the ``(event_type, data)`` sequence a streamed call emits."""
    events: list[tuple[str, dict[str, Any]]] = []
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        elif block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": orjson.dumps(block["input"]).decode()}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
