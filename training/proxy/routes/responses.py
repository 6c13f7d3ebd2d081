"""OpenAI Responses: ``POST .../v1/responses`` (training/proxy/translate_responses.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from training.proxy.fast_path import ModelHandler, ProxyApp
from training.proxy.routes.model_call import WireApi
from training.proxy.translate_responses import (
    chat_to_responses,
    responses_stream_events,
    responses_to_chat,
)
from training.proxy.wire import JSONResponse, event_stream, sse


def _answer(answer: dict[str, Any], body: dict[str, Any], tool_map: Any, stream: bool) -> Response:
    out = chat_to_responses(answer, body, tool_map)
    if stream:
        return event_stream(b"".join(sse(data, event=kind) for kind, data in responses_stream_events(out)))
    return JSONResponse(out)


RESPONSES = WireApi(name="responses", to_chat=responses_to_chat, answer=_answer)


def add_routes(app: ProxyApp, handler: Callable[[WireApi], ModelHandler]) -> None:
    app.add_model_route("POST", "responses", handler(RESPONSES))
