"""Anthropic Messages: ``POST .../v1/messages`` and ``.../v1/messages/count_tokens``
(training/proxy/translate_messages.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from training.proxy.errors import ProxyError, error_response
from training.proxy.fast_path import ModelHandler, ProxyApp
from training.proxy.routes.body import read_json
from training.proxy.routes.context import ProxyContext
from training.proxy.routes.model_call import WireApi
from training.proxy.translate_messages import (
    chat_to_messages,
    messages_stream_events,
    messages_to_chat,
)
from training.proxy.wire import JSONResponse, event_stream, sse


def _to_chat(body: dict[str, Any]) -> tuple[dict[str, Any], None]:
    return messages_to_chat(body), None


def _answer(answer: dict[str, Any], body: dict[str, Any], _: None, stream: bool) -> Response:
    out = chat_to_messages(answer, body)
    if stream:
        return event_stream(b"".join(sse(data, event=kind) for kind, data in messages_stream_events(out)))
    return JSONResponse(out)


MESSAGES = WireApi(name="messages", to_chat=_to_chat, answer=_answer)


def add_routes(app: ProxyApp, handler: Callable[[WireApi], ModelHandler], ctx: ProxyContext) -> None:
    recorder, max_body_bytes = ctx.recorder, ctx.max_body_bytes

    async def count_tokens(request: Request, token: str | None) -> Response:
        """Claude Code asks for token counts; answer with an estimate (≈4 bytes a token)."""
        try:
            await recorder.resolve(token)
            body = await read_json(request, max_body_bytes)
            return JSONResponse({"input_tokens": max(1, len(orjson.dumps(body)) // 4)})
        except ProxyError as exc:
            return error_response("messages", exc)

    app.add_model_route("POST", "messages", handler(MESSAGES))
    app.add_model_route("POST", "messages/count_tokens", count_tokens)
