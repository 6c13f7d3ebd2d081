"""The react harness's chat client: retries what a retry can fix, raises the rest typed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from environments.harnesses.react import chat_client
from environments.harnesses.react.chat_client import (
    BadRequest,
    ChatClient,
    ConnectionFailed,
    StatusError,
)
from environments.httpclient import Response, TransportError

REPLY = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "contacts_search", "arguments": '{"query": "Ada"}'}}]}}]}


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(body).encode(), headers or {})


def _run(handler, max_retries: int = 2):
    calls: list[dict[str, Any]] = []

    async def send(method: str, url: str, **kwargs: Any) -> Response:
        calls.append({"method": method, "url": url, **kwargs})
        return handler(len(calls))

    async def go():
        client = ChatClient("http://engine/v1/", "tok", max_retries=max_retries, send=send)
        try:
            return await client.create({"model": "policy", "messages": []})
        finally:
            await client.aclose()

    return asyncio.run(go()), calls


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(chat_client, "INITIAL_BACKOFF_S", 0.0)


def test_a_429_then_a_reply_is_retried_and_the_tool_call_read():
    messages, calls = _run(lambda n: Response(429, b"", {"retry-after": "0"}) if n == 1 else _json(200, REPLY))
    assert len(calls) == 2 and calls[0]["method"] == "POST" and calls[0]["url"] == "http://engine/v1/chat/completions"
    assert calls[0]["headers"]["Authorization"] == "Bearer tok" and calls[0]["timeout"] == 600.0
    assert calls[0]["json"] == {"model": "policy", "messages": []}
    (message,) = messages
    assert message.content is None
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_1", "contacts_search", '{"query": "Ada"}')]
    assert message.tool_calls[0].raw["type"] == "function"


def test_a_400_is_raised_at_once_with_the_body():
    with pytest.raises(BadRequest, match="maximum context length") as info:
        _run(lambda n: _json(400, {"error": {"message": "maximum context length is 8192"}}))
    assert info.value.status == 400


def test_5xx_past_the_retries_is_a_status_error():
    calls_seen = []

    def handler(n):
        calls_seen.append(n)
        return Response(503, b"overloaded")

    with pytest.raises(StatusError) as info:
        _run(handler, max_retries=2)
    assert info.value.status == 503 and not isinstance(info.value, BadRequest)
    assert calls_seen == [1, 2, 3]


def test_an_unreachable_endpoint_is_connection_failed():
    def handler(n):
        raise TransportError("ConnectionRefusedError: refused")

    with pytest.raises(ConnectionFailed, match="refused"):
        _run(handler, max_retries=1)


def test_a_reply_that_is_not_json_is_a_chat_error():
    with pytest.raises(chat_client.ChatError, match="not JSON"):
        _run(lambda n: Response(200, b"<html>"))
