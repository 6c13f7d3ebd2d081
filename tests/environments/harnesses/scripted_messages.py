"""A scripted Anthropic Messages API server (``POST /v1/messages``, streamed SSE) — a fake
at the model-endpoint boundary for the real Claude Code CLI.

Protocol-faithful event order: ``message_start`` → per content block ``content_block_start``
→ ``content_block_delta`` (``text_delta`` / ``input_json_delta``) → ``content_block_stop``
→ ``message_delta`` (stop_reason, usage) → ``message_stop``. Non-streamed requests get the
whole message. Each call pops the next scripted turn (``Turn.say`` / ``Turn.call`` from
scripted_responses); an empty script answers "done". ``requests`` keeps every body.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tests.environments.harnesses.scripted_responses import Turn
from training.proxy.server import BackgroundUvicorn


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ScriptedMessages(BackgroundUvicorn):
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._script: deque[Turn] = deque()
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"]),
                                Route("/v1/messages/count_tokens", self._count, methods=["POST"])])
        super().__init__(app)

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    def _next(self) -> Turn:
        with self._lock:
            return self._script.popleft() if self._script else Turn.say("done")

    async def _count(self, request: Request) -> JSONResponse:
        return JSONResponse({"input_tokens": 100})

    async def _messages(self, request: Request) -> StreamingResponse | JSONResponse:
        body = json.loads(await request.body())
        self.requests.append(body)
        turn = self._next()
        blocks: list[dict[str, Any]] = []
        if turn.text is not None:
            blocks.append({"type": "text", "text": turn.text})
        for name, args in turn.calls:
            blocks.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": args})
        stop = "tool_use" if turn.calls else "end_turn"
        message = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": blocks, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 10}}
        if not body.get("stream"):
            return JSONResponse(message)
        return StreamingResponse(self._events(message), media_type="text/event-stream")

    async def _events(self, message: dict[str, Any]):
        start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
        yield _sse("message_start", {"type": "message_start", "message": start})
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield _sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}})
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                yield _sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": i})
        yield _sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": 10}})
        yield _sse("message_stop", {"type": "message_stop"})
