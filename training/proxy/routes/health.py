"""``GET /healthz``: open, no token."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.responses import Response

from training.proxy.wire import JSONResponse, now


def add_routes(app: FastAPI) -> None:
    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"ok": True, "time": now()})
