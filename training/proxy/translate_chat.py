"""Chat Completions passthrough, as pure functions (no I/O).

The engine is always asked non-streamed, with vLLM's ``return_token_ids``/``logprobs`` (so ids
and logprobs come back whole, the thing a training sample needs); a client that asked for a
stream gets the answer replayed as ``chat.completion.chunk`` events by
:func:`chat_stream_chunks`. What the client receives never carries the engine's token ids,
and carries logprobs only when the client asked for them.
"""

from __future__ import annotations

from typing import Any

from training.proxy.errors import ProxyError

#: Engine-side extras the proxy adds itself; a client's values are ignored.
_ENGINE_KEYS = ("stream", "stream_options", "return_token_ids")


def chat_for_engine(body: dict[str, Any]) -> dict[str, Any]:
    """A client's chat body → the engine request body (validated, non-streamed)."""
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise ProxyError(400, "messages: a non-empty list is required", param="messages")
    if int(body.get("n") or 1) != 1:
        raise ProxyError(400, "n > 1 is not supported: one choice per recorded call", param="n",
                         code="unsupported_parameter")
    out = {k: v for k, v in body.items() if k not in _ENGINE_KEYS}
    if "max_completion_tokens" in out and "max_tokens" not in out:
        out["max_tokens"] = out.pop("max_completion_tokens")
    return out


def chat_for_client(response: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The engine's completion as the client sees it: no token ids; logprobs only if asked."""
    keep_logprobs = bool(request.get("logprobs"))
    out = {k: v for k, v in response.items() if k not in ("prompt_token_ids", "prompt_logprobs", "kv_transfer_params")}
    choices = []
    for choice in response.get("choices") or []:
        c = {k: v for k, v in choice.items() if k != "token_ids"}
        if not keep_logprobs:
            c["logprobs"] = None
        choices.append(c)
    out["choices"] = choices
    if request.get("model"):
        out["model"] = request["model"]
    return out


def chat_stream_chunks(response: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """A complete chat completion → the chunk sequence of a streamed one (before ``[DONE]``)."""
    client = chat_for_client(response, request)
    base = {"id": client.get("id", "chatcmpl-proxy"), "object": "chat.completion.chunk",
            "created": client.get("created", 0), "model": client.get("model")}
    chunks: list[dict[str, Any]] = []
    for choice in client["choices"]:
        index = choice.get("index", 0)
        message = choice.get("message") or {}

        def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None,
                  index: int = index) -> dict[str, Any]:
            return {**base, "choices": [{"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]}

        chunks.append(chunk({"role": "assistant", "content": ""}))
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            chunks.append(chunk({"reasoning_content": reasoning}))
        if message.get("content"):
            chunks.append(chunk({"content": message["content"]}, logprobs=choice.get("logprobs")))
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            chunks.append(chunk({"tool_calls": [{"index": i, "id": call.get("id"), "type": "function",
                                                 "function": {"name": fn.get("name"), "arguments": ""}}]}))
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": fn.get("arguments") or ""}}]}))
        chunks.append(chunk({}, finish=choice.get("finish_reason") or "stop"))
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": client.get("usage")})
    return chunks
