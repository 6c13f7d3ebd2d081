"""OpenAI Chat Completions: ``POST .../v1/chat/completions`` (training/proxy/translate_chat.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from training.proxy.fast_path import ModelHandler, ProxyApp
from training.proxy.routes.model_call import WireApi
from training.proxy.translate_chat import (
    chat_for_client,
    chat_for_engine,
    chat_stream_chunks,
)
from training.proxy.wire import JSONResponse, event_stream, sse


def _to_chat(body: dict[str, Any]) -> tuple[dict[str, Any], None]:
    return chat_for_engine(body), None


def _answer(answer: dict[str, Any], body: dict[str, Any], _: None, stream: bool) -> Response:
    if stream:
        return event_stream(b"".join(sse(c) for c in chat_stream_chunks(answer, body)) + sse("[DONE]"))
    return JSONResponse(chat_for_client(answer, body))


CHAT = WireApi(name="chat", to_chat=_to_chat, answer=_answer, keeps_client_request=False)


def add_routes(app: ProxyApp, handler: Callable[[WireApi], ModelHandler]) -> None:
    app.add_model_route("POST", "chat/completions", handler(CHAT))
