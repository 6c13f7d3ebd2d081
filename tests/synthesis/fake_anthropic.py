"""A fake Anthropic Messages API on loopback, for tests (the paid API we cannot reach).

Protocol-faithful to what Claude Code needs of ``POST /v1/messages`` (streamed SSE events
``message_start`` / ``content_block_*`` / ``message_delta`` / ``message_stop``, or one JSON
message), with ``usage`` so the client computes a cost, plus ``/v1/messages/count_tokens``.
Each answer comes from ``decide(body) -> list of blocks`` (text or tool_use); requests that
do not offer the decider's tools (the CLI's side calls: titles, summaries) get a short text.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from training.proxy.server import BackgroundUvicorn

Block = dict[str, Any]
INPUT_TOKENS, OUTPUT_TOKENS = 2000, 300


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_block(name: str, args: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": args}


class FakeAnthropic(BackgroundUvicorn):
    """``with FakeAnthropic(decide) as fake: ... fake.url`` (set ANTHROPIC_BASE_URL to it)."""

    def __init__(self, decide: Callable[[dict[str, Any]], list[Block]]) -> None:
        self.decide = decide
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        app = Starlette(routes=[
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
        ])
        super().__init__(app)

    def __enter__(self) -> FakeAnthropic:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _count(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": INPUT_TOKENS})

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        with self.lock:
            self.requests.append(body)
        try:
            blocks = self.decide(body)
        except Exception as exc:  # noqa: BLE001 - surfaces as an API error to the client
            return JSONResponse({"type": "error", "error": {"type": "api_error", "message": str(exc)}}, status_code=500)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        msg = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
               "model": body.get("model", "claude"), "content": blocks, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if not body.get("stream"):
            return JSONResponse(msg)
        return StreamingResponse(self._events(msg), media_type="text/event-stream")

    @staticmethod
    async def _events(msg: dict[str, Any]):  # noqa: ANN205
        def ev(kind: str, data: dict[str, Any]) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        start = {**msg, "content": [], "stop_reason": None, "usage": {**msg["usage"], "output_tokens": 1}}
        yield ev("message_start", {"message": start})
        for i, block in enumerate(msg["content"]):
            if block["type"] == "text":
                yield ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
                yield ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                yield ev("content_block_start", {"index": i, "content_block": {**block, "input": {}}})
                yield ev("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                                        "partial_json": json.dumps(block["input"])}})
            yield ev("content_block_stop", {"index": i})
        yield ev("message_delta", {"delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                   "usage": {"output_tokens": msg["usage"]["output_tokens"]}})
        yield ev("message_stop", {})
