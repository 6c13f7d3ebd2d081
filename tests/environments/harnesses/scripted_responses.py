"""A scripted OpenAI Responses API server (``POST /v1/responses``, streamed SSE) — a fake at
the model-endpoint boundary for the real Codex CLI, which only speaks the Responses API.

Protocol-faithful to what Codex needs: ``response.created``, per output item
``response.output_item.added`` → (text deltas / argument deltas) → ``response.output_item.done``,
then ``response.completed`` with usage. Each call pops the next scripted turn:
``Turn.call(name, args)`` (a function call) or ``Turn.say(text)`` (an assistant message);
an empty script answers with a short message. ``requests`` keeps every request body.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from training.proxy.server import BackgroundUvicorn


@dataclass
class Turn:
    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def say(cls, text: str) -> Turn:
        return cls(text=text)

    @classmethod
    def call(cls, name: str, args: dict[str, Any]) -> Turn:
        return cls(calls=[(name, args)])


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ScriptedResponses(BackgroundUvicorn):
    def __init__(self, responder: Callable[[dict[str, Any]], Turn] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responder = responder
        self._script: deque[Turn] = deque()
        self._lock = threading.Lock()
        app = Starlette(routes=[
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/models", lambda r: JSONResponse({"object": "list", "data": []}), methods=["GET"]),
        ])
        super().__init__(app)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    def _next(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.responder(body) if self.responder else Turn.say("done")

    async def _responses(self, request: Request) -> StreamingResponse | JSONResponse:
        body = json.loads(await request.body())
        self.requests.append(body)
        turn = self._next(body)
        return StreamingResponse(self._events(body, turn), media_type="text/event-stream")

    async def _events(self, body: dict[str, Any], turn: Turn):
        rid = f"resp_{uuid.uuid4().hex[:16]}"
        seq = iter(range(10_000))
        base = {"id": rid, "object": "response", "model": body.get("model"), "created_at": 0}
        yield _sse("response.created", {"type": "response.created", "sequence_number": next(seq),
                                        "response": {**base, "status": "in_progress", "output": []}})
        output: list[dict[str, Any]] = []
        if turn.text is not None:
            mid = f"msg_{uuid.uuid4().hex[:12]}"
            idx = len(output)
            item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
            yield _sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                      "output_index": idx, "item": item})
            part = {"type": "output_text", "text": "", "annotations": []}
            yield _sse("response.content_part.added", {"type": "response.content_part.added", "sequence_number": next(seq),
                                                       "item_id": mid, "output_index": idx, "content_index": 0, "part": part})
            yield _sse("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": next(seq),
                                                      "item_id": mid, "output_index": idx, "content_index": 0,
                                                      "delta": turn.text})
            yield _sse("response.output_text.done", {"type": "response.output_text.done", "sequence_number": next(seq),
                                                     "item_id": mid, "output_index": idx, "content_index": 0,
                                                     "text": turn.text})
            done_part = {"type": "output_text", "text": turn.text, "annotations": []}
            yield _sse("response.content_part.done", {"type": "response.content_part.done", "sequence_number": next(seq),
                                                      "item_id": mid, "output_index": idx, "content_index": 0,
                                                      "part": done_part})
            item = {**item, "status": "completed", "content": [done_part]}
            yield _sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq),
                                                     "output_index": idx, "item": item})
            output.append(item)
        for name, args in turn.calls:
            idx = len(output)
            fid = f"fc_{uuid.uuid4().hex[:12]}"
            arguments = json.dumps(args)
            item = {"type": "function_call", "id": fid, "call_id": f"call_{uuid.uuid4().hex[:12]}", "name": name,
                    "arguments": "", "status": "in_progress"}
            yield _sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                      "output_index": idx, "item": item})
            yield _sse("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "sequence_number": next(seq), "item_id": fid,
                "output_index": idx, "delta": arguments})
            yield _sse("response.function_call_arguments.done", {
                "type": "response.function_call_arguments.done", "sequence_number": next(seq), "item_id": fid,
                "output_index": idx, "arguments": arguments})
            item = {**item, "arguments": arguments, "status": "completed"}
            yield _sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq),
                                                     "output_index": idx, "item": item})
            output.append(item)
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
        yield _sse("response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                          "response": {**base, "status": "completed", "output": output,
                                                       "usage": usage}})
