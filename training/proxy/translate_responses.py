"""OpenAI Responses API ⇄ Chat Completions, as pure functions (no I/O).

:func:`responses_to_chat` turns a ``POST /responses`` body into the chat body sent to the
engine; :func:`chat_to_responses` turns the engine's chat completion back into a Response
object; :func:`responses_stream_events` replays that Response as the SSE event sequence
the Responses API streams (``response.created`` … ``response.output_item.added``/``.done``
… ``response.completed``), which Codex CLI needs.

Item mapping: ``message`` items (roles user/assistant/system/developer; developer → system),
``function_call`` → assistant ``tool_calls``, ``function_call_output`` → ``tool`` messages,
``custom_tool_call``/``custom_tool_call_output`` (freeform tools such as Codex's
``apply_patch``) → a function tool with one string parameter ``input``; tools inside a
``namespace`` tool (Codex's ``multi_agent_v1``) become plain functions and the model's calls
to them get their ``namespace`` back. ``reasoning`` items and hosted tools (web_search,
file_search, …) have no chat equivalent and are dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from training.proxy.errors import ProxyError
from training.proxy.wire import new_id, now

log = logging.getLogger(__name__)

#: Responses parameters the proxy cannot honour without state it does not keep.
UNSUPPORTED = ("previous_response_id", "background", "conversation", "prompt")

@dataclass
class ToolMap:
    """What turning chat tool calls back into Responses items needs to know about the tools."""

    custom: set[str] = field(default_factory=set)  # freeform tools: calls become custom_tool_call
    namespaces: dict[str, str] = field(default_factory=dict)  # tool name → its namespace


_CUSTOM_INPUT_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The raw input of this tool."}},
    "required": ["input"],
}


def _text_of(content: Any) -> str:
    """Text of a Responses content value (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text", "summary_text"):
            parts.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            parts.append(str(part.get("refusal", "")))
    return "".join(parts)


def _chat_content(content: Any) -> str | list[dict[str, Any]]:
    """Responses message content → chat content (text, or parts when images are present)."""
    if content is None or isinstance(content, str):
        return content or ""
    has_image = any(isinstance(p, dict) and p.get("type") == "input_image" for p in content)
    if not has_image:
        return _text_of(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_image":
            url = part.get("image_url") or part.get("file_id") or ""
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif part.get("type") in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(part.get("text", ""))})
    return parts


def _tools_to_chat(tools: list[dict[str, Any]], tool_map: ToolMap, namespace: str | None = None) -> list[dict[str, Any]]:
    """Responses tools → chat tools; fills ``tool_map`` with freeform tools and namespaces."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if namespace is not None and tool.get("name"):
            tool_map.namespaces[tool["name"]] = namespace
        kind = tool.get("type")
        if kind == "function":
            fn = {"name": tool["name"], "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
            if tool.get("description"):
                fn["description"] = tool["description"]
            out.append({"type": "function", "function": fn})
        elif kind == "custom":
            tool_map.custom.add(tool["name"])
            fn = {"name": tool["name"], "parameters": _CUSTOM_INPUT_SCHEMA}
            if tool.get("description"):
                fn["description"] = tool["description"]
            out.append({"type": "function", "function": fn})
        elif kind == "namespace" and isinstance(tool.get("tools"), list):
            out.extend(_tools_to_chat(tool["tools"], tool_map, namespace=tool.get("name")))
        else:
            log.debug("dropping hosted Responses tool of type %r", kind)
    return out


def _tool_choice_to_chat(choice: Any) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom") and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        return choice.get("mode", "auto")
    return "auto"


def _input_to_messages(items: Any) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []

    def open_assistant() -> dict[str, Any]:
        """The assistant turn a function call belongs to: the previous message if it is one."""
        if messages and messages[-1]["role"] == "assistant":
            messages[-1].setdefault("tool_calls", [])
            return messages[-1]
        msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}
        messages.append(msg)
        return msg

    for item in items or []:
        if not isinstance(item, dict):
            raise ProxyError(400, f"input items must be objects, got {type(item).__name__}", param="input")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            if role == "developer":
                role = "system"
            if role not in ("user", "assistant", "system"):
                raise ProxyError(400, f"unsupported message role {role!r} in input", param="input")
            if role == "assistant":
                messages.append({"role": "assistant", "content": _text_of(item.get("content"))})
            else:
                messages.append({"role": role, "content": _chat_content(item.get("content"))})
        elif kind in ("function_call", "custom_tool_call"):
            if kind == "function_call":
                args = item.get("arguments") or "{}"
            else:
                args = orjson.dumps({"input": item.get("input", "")}).decode()
            call_id = item.get("call_id") or item.get("id") or new_id("call_")
            open_assistant()["tool_calls"].append(
                {"id": call_id, "type": "function", "function": {"name": item.get("name", ""), "arguments": args}}
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else _text_of(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id", ""), "content": text})
        elif kind == "reasoning":
            continue
        else:
            log.debug("dropping Responses input item of type %r", kind)
    return messages


def responses_to_chat(body: dict[str, Any]) -> tuple[dict[str, Any], ToolMap]:
    """A Responses request body → (chat body for the engine, what to know about its tools)."""
    for key in UNSUPPORTED:
        if body.get(key):
            raise ProxyError(400, f"parameter {key!r} is not supported by this proxy", param=key, code="unsupported_parameter")
    if "input" not in body and not body.get("instructions"):
        raise ProxyError(400, "missing required parameter 'input'", param="input")
    messages = _input_to_messages(body.get("input"))
    if body.get("instructions"):
        messages.insert(0, {"role": "system", "content": str(body["instructions"])})
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tool_map = ToolMap()
    if body.get("tools"):
        tools = _tools_to_chat(body["tools"], tool_map)
        if tools:
            chat["tools"] = tools
            if body.get("tool_choice") is not None:
                chat["tool_choice"] = _tool_choice_to_chat(body["tool_choice"])
            if body.get("parallel_tool_calls") is not None:
                chat["parallel_tool_calls"] = bool(body["parallel_tool_calls"])
    for src, dst in (("temperature", "temperature"), ("top_p", "top_p"), ("max_output_tokens", "max_tokens"),
                     ("user", "user"), ("seed", "seed")):
        if body.get(src) is not None:
            chat[dst] = body[src]
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        chat["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.get("name", "output"), "schema": fmt.get("schema", {}), "strict": fmt.get("strict", False)},
        }
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    return chat, tool_map


def _usage(chat_usage: dict[str, Any] | None) -> dict[str, Any]:
    u = chat_usage or {}
    inp, out = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


def chat_to_responses(chat: dict[str, Any], request: dict[str, Any], tools: ToolMap | None = None,
                      *, response_id: str | None = None) -> dict[str, Any]:
    """The engine's chat completion → a completed Response object for ``request``."""
    tools = tools or ToolMap()
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        output.append({"type": "reasoning", "id": new_id("rs_"), "summary": [{"type": "summary_text", "text": reasoning}]})
    if message.get("content"):
        output.append({
            "type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": message["content"], "annotations": [], "logprobs": []}],
        })
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        name, args = fn.get("name", ""), fn.get("arguments") or "{}"
        call_id = call.get("id") or new_id("call_")
        if name in tools.custom:
            try:
                raw = orjson.loads(args).get("input", args)
            except (orjson.JSONDecodeError, AttributeError):
                raw = args
            output.append({"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call_id, "name": name,
                           "input": raw if isinstance(raw, str) else orjson.dumps(raw).decode(), "status": "completed"})
        else:
            item = {"type": "function_call", "id": new_id("fc_"), "call_id": call_id, "name": name,
                    "arguments": args, "status": "completed"}
            if name in tools.namespaces:
                item["namespace"] = tools.namespaces[name]
            output.append(item)
    finish = choice.get("finish_reason")
    incomplete = finish == "length"
    return {
        "id": response_id or new_id("resp_"),
        "object": "response",
        "created_at": chat.get("created") or now(),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": request.get("model") or chat.get("model"),
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "store": request.get("store", False),
        "temperature": request.get("temperature", 1.0),
        "text": request.get("text") or {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": request.get("truncation", "disabled"),
        "usage": _usage(chat.get("usage")),
        "user": request.get("user"),
        "metadata": request.get("metadata") or {},
    }


def responses_stream_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A completed Response → the ``(event_type, data)`` sequence a streamed call emits."""
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

    shell = {**response, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    emit("response.created", response=shell)
    emit("response.in_progress", response=shell)
    for index, item in enumerate(response["output"]):
        kind = item["type"]
        if kind == "message":
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "content": []})
            for c_index, part in enumerate(item["content"]):
                emit("response.content_part.added", item_id=item["id"], output_index=index, content_index=c_index,
                     part={**part, "text": ""})
                emit("response.output_text.delta", item_id=item["id"], output_index=index, content_index=c_index,
                     delta=part["text"], logprobs=[])
                emit("response.output_text.done", item_id=item["id"], output_index=index, content_index=c_index,
                     text=part["text"], logprobs=[])
                emit("response.content_part.done", item_id=item["id"], output_index=index, content_index=c_index,
                     part=part)
        elif kind == "function_call":
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "arguments": ""})
            emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                 delta=item["arguments"])
            emit("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                 name=item["name"], arguments=item["arguments"])
        elif kind == "custom_tool_call":
            emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "input": ""})
            emit("response.custom_tool_call_input.delta", item_id=item["id"], output_index=index, delta=item["input"])
            emit("response.custom_tool_call_input.done", item_id=item["id"], output_index=index, input=item["input"])
        elif kind == "reasoning":
            emit("response.output_item.added", output_index=index, item={**item, "summary": []})
            for s_index, part in enumerate(item["summary"]):
                emit("response.reasoning_summary_part.added", item_id=item["id"], output_index=index,
                     summary_index=s_index, part={**part, "text": ""})
                emit("response.reasoning_summary_text.delta", item_id=item["id"], output_index=index,
                     summary_index=s_index, delta=part["text"])
                emit("response.reasoning_summary_text.done", item_id=item["id"], output_index=index,
                     summary_index=s_index, text=part["text"])
                emit("response.reasoning_summary_part.done", item_id=item["id"], output_index=index,
                     summary_index=s_index, part=part)
        emit("response.output_item.done", output_index=index, item=item)
    final_kind = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    emit(final_kind, response=response)
    return events
