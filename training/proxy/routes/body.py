"""Reading a request's JSON body, bounded in size; errors as :class:`ProxyError` (400, 413)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from training.proxy.errors import ProxyError


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The body's JSON object (at most ``limit`` bytes)."""
    return (await read_body(request, limit))[0]


def may_hold_images(raw: bytes) -> bool:
    """False only when no part of the body can be an image part: its JSON never spells
    "image", not even with \\u escapes of i, m, a, g or e (all \\u006X). A byte search
    instead of a walk over the whole history on every call."""
    return b"image" in raw or b"\\u006" in raw


async def read_body(request: Request, limit: int) -> tuple[dict[str, Any], bytes]:
    """The JSON object of the body and its raw bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProxyError(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ProxyError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProxyError(400, f"malformed JSON body: {exc}") from exc
    if not isinstance(body, dict):
        raise ProxyError(400, f"request body must be a JSON object, got {type(body).__name__}")
    return body, raw
