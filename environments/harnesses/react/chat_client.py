"""The react harness's chat client: ``POST {base_url}/chat/completions``
(:mod:`environments.httpclient`: stdlib HTTP on a worker thread, ~45 ms of imports less than httpx).

Why not the openai SDK: its import (the generated ``openai.types`` tree) costs ~0.75 s of CPU
(``python -X importtime``: 0.75 of the 0.88 s it takes to import the react loop), and every
rollout starts one harness process, so the main job on 2 cores paid it ~300 times. The
harness needs one endpoint and three fields of the reply (``choices[0].message.content``,
``.tool_calls``, and the choices being there), which this module reads from the JSON.

Retries follow the SDK's policy for the failures a retry can fix: connection errors and
HTTP 408 / 409 / 429 / 5xx, ``max_retries`` times with exponential backoff (a ``Retry-After``
header under 60 s wins). Other 4xx are raised at once: 400 as :class:`BadRequest` (the
harness classifies its message: context overflow, malformed tool call), the rest as
:class:`StatusError`.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from environments.httpclient import Response, TransportError, request

RETRY_STATUSES = frozenset({408, 409, 429})
INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0


class ChatError(Exception):
    """The endpoint could not be reached, or answered with an error status."""


class ConnectionFailed(ChatError):
    """No HTTP answer (refused, reset, timed out) after the retries."""


class StatusError(ChatError):
    """An HTTP error status (after the retries, for retryable ones)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"Error code: {status} - {body}")
        self.status, self.body = status, body


class BadRequest(StatusError):
    """HTTP 400: the request itself was refused (context overflow, tools not supported ...)."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    raw: dict[str, Any]  # the call as the endpoint sent it (fed back in the assistant message)


@dataclass(frozen=True)
class ChatMessage:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)


def _tool_call(raw: Any) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise ChatError(f"malformed tool call in the reply: {json.dumps(raw)[:200]}")
    fn = raw["function"]
    kept = {k: v for k, v in raw.items() if v is not None}
    return ToolCall(id=str(raw.get("id") or ""), name=str(fn.get("name") or ""),
                    arguments=fn.get("arguments") if isinstance(fn.get("arguments"), str) else "", raw=kept)


def parse_choices(body: Any) -> list[ChatMessage]:
    """The messages of a chat-completions reply body, in choice order."""
    if not isinstance(body, dict) or not isinstance(body.get("choices", []), list):
        raise ChatError("the reply is not a chat completion (no 'choices' list)")
    out = []
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ChatError("a choice of the reply has no 'message' object")
        content = message.get("content")
        out.append(ChatMessage(content=content if isinstance(content, str) else None,
                               tool_calls=[_tool_call(c) for c in message.get("tool_calls") or []]))
    return out


def _backoff(attempt: int, retry_after: str | None) -> float:
    if retry_after:
        try:
            seconds = float(retry_after)
            if 0 <= seconds <= 60:
                return seconds
        except ValueError:
            pass
    return min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2**attempt) * (1 - 0.25 * random.random())


class ChatClient:
    """One async HTTP client for an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 600.0, max_retries: int = 2,
                 send: Callable[..., Awaitable[Response]] = request) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.max_retries = max_retries
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._send = send

    async def create(self, payload: dict[str, Any]) -> list[ChatMessage]:
        attempt = 0
        while True:
            try:
                resp = await self._send("POST", self.url, json=payload, headers=self._headers, timeout=self.timeout)
            except TransportError as exc:
                if attempt >= self.max_retries:
                    raise ConnectionFailed(f"{type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(_backoff(attempt, None))
                attempt += 1
                continue
            if resp.status_code < 400:
                try:
                    return parse_choices(resp.json())
                except ValueError as exc:
                    raise ChatError(f"the reply is not JSON: {resp.text[:200]!r}") from exc
            if (resp.status_code in RETRY_STATUSES or resp.status_code >= 500) and attempt < self.max_retries:
                await asyncio.sleep(_backoff(attempt, resp.headers.get("retry-after")))
                attempt += 1
                continue
            error = BadRequest if resp.status_code == 400 else StatusError
            raise error(resp.status_code, resp.text[:4000])

    async def aclose(self) -> None:
        """Nothing held open (each call is its own request)."""
