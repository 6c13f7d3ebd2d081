"""A fake vLLM OpenAI-compatible server on loopback, for tests and benchmarks (an external-boundary fake).

Protocol-faithful to vLLM's chat completions wire format: ``GET /v1/models``,
``POST /v1/chat/completions`` streaming and not, ``tool_calls``, and with
``return_token_ids: true`` the ids vLLM returns (``prompt_token_ids`` at the top level,
``choices[i].token_ids``), with ``logprobs: true`` ``choices[i].logprobs.content[j].logprob``.
Token ids come from a deterministic fake tokenizer (UTF-8 bytes of a ChatML-like render).

Use::

    with FakeVLLM() as fake:                      # or: async with FakeVLLM() as fake
        fake.script(FakeReply.tool("bash", {"cmd": "ls"}), FakeReply.text("done"))
        engine = OpenAICompatEngine(fake.base_url)  # http://127.0.0.1:PORT/v1
        ...
        fake.requests                              # request bodies received, in order

Unscripted calls get ``responder(body)`` if set, else ``"echo: <last user text>"``.
``FakeReply.failure(500)`` answers an error; ``delay`` sleeps before answering.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from training.proxy.server import BackgroundUvicorn


def fake_tokenize(text: str) -> list[int]:
    """The fake tokenizer: one token per UTF-8 byte."""
    return list(text.encode("utf-8"))


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """A ChatML-like render of a chat request (what the prompt ids tokenize)."""
    out = []
    if tools:
        out.append("<|im_start|>tools\n" + orjson.dumps(tools).decode() + "<|im_end|>\n")
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        body = content or ""
        if msg.get("tool_calls"):
            body += orjson.dumps(msg["tool_calls"]).decode()
        out.append(f"<|im_start|>{msg.get('role')}\n{body}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


@dataclass
class FakeReply:
    """One scripted answer of the fake engine."""

    content: str | None = "ok"
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    reasoning: str | None = None
    status: int = 200
    error: str = "fake engine failure"
    delay: float = 0.0

    @classmethod
    def text(cls, content: str, **kw: Any) -> FakeReply:
        return cls(content=content, **kw)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | str, content: str | None = None, **kw: Any) -> FakeReply:
        return cls(content=content, tool_calls=[(name, arguments)], **kw)

    @classmethod
    def failure(cls, status: int = 500, error: str = "fake engine failure", **kw: Any) -> FakeReply:
        return cls(content=None, status=status, error=error, **kw)

    def completion_text(self) -> str:
        """What the response token ids tokenize: content, then each call as JSON."""
        text = self.content or ""
        for name, args in self.tool_calls:
            text += orjson.dumps({"name": name, "arguments": args}).decode()
        return text


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _logprob(i: int) -> float:
    return -0.05 * ((i % 7) + 1)


class FakeVLLM(BackgroundUvicorn):
    """The fake engine served on loopback (see module doc)."""

    def __init__(self, model: str = "fake-policy", host: str = "127.0.0.1", port: int = 0,
                 responder: Callable[[dict[str, Any]], FakeReply] | None = None,
                 deterministic_ids: bool = False) -> None:
        self.model = model
        #: Tool-call ids from a hash of the prompt (two runs of one script see the same ids).
        self.deterministic_ids = deterministic_ids
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._script: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        app = Starlette(routes=[
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/health", lambda r: Response("ok"), methods=["GET"]),
        ])
        super().__init__(app, host=host, port=port)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of the fake (ends in ``/v1``)."""
        return f"{self.url}/v1"

    def script(self, *replies: FakeReply) -> None:
        """Queue answers for the next calls, in order."""
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()

    def _next_reply(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return FakeReply.text(f"echo: {_last_user_text(body.get('messages') or [])}")

    async def _models(self, _: Request) -> Response:
        data = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "vllm",
                                            "root": self.model, "max_model_len": 32768}]}
        return Response(orjson.dumps(data), media_type="application/json")

    async def _chat(self, request: Request) -> Response:
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _error(400, "malformed JSON")
        self.requests.append(body)
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.", code=404)
        if not body.get("messages"):
            return _error(400, "messages must be a non-empty list")
        reply = self._next_reply(body)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return _error(reply.status, reply.error, code=reply.status)
        return self._answer(body, reply)

    def _answer(self, body: dict[str, Any], reply: FakeReply) -> Response:
        prompt_ids = fake_tokenize(render_prompt(body["messages"], body.get("tools")))
        out_text = reply.completion_text()
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        out_ids = fake_tokenize(out_text)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        content = reply.content
        if max_tokens is not None and len(out_ids) > int(max_tokens):
            out_ids = out_ids[: int(max_tokens)]
            content = bytes(out_ids).decode("utf-8", "ignore") if not reply.tool_calls else content
            finish = "length"
        seed = hashlib.sha256(orjson.dumps(prompt_ids)).hexdigest() if self.deterministic_ids else None

        def call_id(i: int) -> str:
            return hashlib.sha256(f"{seed}{i}".encode()).hexdigest()[:16] if seed else uuid.uuid4().hex[:16]

        calls = [{"id": f"chatcmpl-tool-{call_id(i)}", "type": "function",
                  "function": {"name": name, "arguments": args if isinstance(args, str) else orjson.dumps(args).decode()}}
                 for i, (name, args) in enumerate(reply.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls,
                                   "reasoning_content": reply.reasoning}
        want_ids, want_lp = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        logprobs = {"content": [{"token": f"<{t}>", "logprob": _logprob(i), "bytes": [t], "top_logprobs": []}
                                for i, t in enumerate(out_ids)]} if want_lp else None
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(out_ids),
                 "total_tokens": len(prompt_ids) + len(out_ids)}
        cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        if body.get("stream"):
            return StreamingResponse(self._stream(cid, created, message, finish, out_ids, logprobs, usage, body,
                                                  prompt_ids if want_ids else None),
                                     media_type="text/event-stream")
        choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish,
                                  "stop_reason": None}
        data: dict[str, Any] = {"id": cid, "object": "chat.completion", "created": created, "model": self.model,
                                "choices": [choice], "usage": usage, "prompt_logprobs": None}
        if want_ids:
            data["prompt_token_ids"] = prompt_ids
            choice["token_ids"] = out_ids
        return Response(orjson.dumps(data), media_type="application/json")

    async def _stream(self, cid: str, created: int, message: dict[str, Any], finish: str, out_ids: list[int],
                      logprobs: dict | None, usage: dict, body: dict[str, Any], prompt_ids: list[int] | None):
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": self.model}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason, **extra}
            data = {**base, "choices": [choice]}
            if prompt_ids is not None and delta.get("role"):
                data["prompt_token_ids"] = prompt_ids
            return b"data: " + orjson.dumps(data) + b"\n\n"

        yield chunk({"role": "assistant", "content": ""})
        if message["content"]:
            extra = {"token_ids": out_ids} if prompt_ids is not None else {}
            if logprobs is not None:
                extra["logprobs"] = logprobs
            yield chunk({"content": message["content"]}, **extra)
        for i, call in enumerate(message["tool_calls"]):
            yield chunk({"tool_calls": [{"index": i, **call}]})
        yield chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            yield b"data: " + orjson.dumps({**base, "choices": [], "usage": usage}) + b"\n\n"
        yield b"data: [DONE]\n\n"


def _error(status: int, message: str, code: int | None = None) -> Response:
    kind = "BadRequestError" if status < 500 else "InternalServerError"
    return Response(orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": code or status}}),
                    status_code=status, media_type="application/json")
