"""Wire helpers shared by the proxy's routes: fast JSON responses, SSE framing, id minting."""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson
from starlette.responses import Response


class JSONResponse(Response):
    """A JSON response rendered with orjson (fast; non-str keys allowed)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless it is already ``str``."""
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    if event is None:
        return f"data: {payload}\n\n".encode()
    return f"event: {event}\ndata: {payload}\n\n".encode()


def new_id(prefix: str, nbytes: int = 12) -> str:
    """A fresh id such as ``resp_3f2a...`` or ``toolu_...``."""
    return f"{prefix}{secrets.token_hex(nbytes)}"


def now() -> int:
    return int(time.time())


_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def event_stream(payload: bytes) -> Response:
    """A whole server-sent event stream answered at once (the proxy replays streams: the
    engine is never asked to stream)."""
    return Response(payload, media_type="text/event-stream", headers=_SSE_HEADERS)
