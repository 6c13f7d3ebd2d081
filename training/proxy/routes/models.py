"""``GET .../v1/models``: the served models, in a shape both OpenAI and Anthropic clients read."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from training.engines.base import EngineError
from training.proxy.errors import ProxyError, error_response
from training.proxy.fast_path import ProxyApp
from training.proxy.routes.context import ProxyContext
from training.proxy.wire import JSONResponse, now


def add_routes(app: ProxyApp, ctx: ProxyContext) -> None:
    recorder, engine, allowed = ctx.recorder, ctx.engine, ctx.allowed

    async def models(request: Request, token: str | None) -> Response:
        try:
            await recorder.resolve(token)
            try:
                ids = sorted(allowed) if allowed is not None else await engine.list_models()
            except EngineError as exc:
                raise ProxyError(502, f"engine error: {exc}") from exc
            created = now()
            data = [{"id": m, "object": "model", "created": created, "owned_by": "openforge",
                     "type": "model", "display_name": m, "created_at": "1970-01-01T00:00:00Z"} for m in ids]
            return JSONResponse({"object": "list", "data": data, "has_more": False,
                                 "first_id": ids[0] if ids else None, "last_id": ids[-1] if ids else None})
        except ProxyError as exc:
            return error_response("models", exc)

    app.add_model_route("GET", "models", models)
