"""Model calls go from the server straight to their handler, past the framework's layers.

A model call through FastAPI passes five middlewares (server errors, telemetry, exception
handlers, an exit stack) and a linear regex route search before its handler runs; on the
small request that was about a quarter of the proxy's event-loop time per call. The model
routes' handlers catch their own errors and answer in the caller's format, so none of those
layers does anything for them. :class:`ProxyApp` is a FastAPI app that matches exactly those
routes first (a dict lookup) and sends everything else — admin API, health, other methods,
an app served under a root path — through the usual stack, where the same routes are
registered too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

#: A model route's handler: the request and the rollout token (from the path or the headers).
ModelHandler = Callable[[Request, str | None], Awaitable[Response]]

_ROLLOUT_PREFIX = "/rollouts/"


def header_token(request: Request) -> str | None:
    """The rollout token of a ``/v1/...`` call: ``Authorization: Bearer`` or ``x-api-key``."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.headers.get("x-api-key") or None


class ProxyApp(FastAPI):
    """FastAPI with a direct dispatch of ``/rollouts/<token>/v1/<suffix>`` and ``/v1/<suffix>``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model_routes: dict[tuple[str, str], ModelHandler] = {}

    def add_model_route(self, method: str, suffix: str, handler: ModelHandler) -> None:
        """Serve ``handler`` at ``/rollouts/{token}/v1/<suffix>`` and ``/v1/<suffix>`` (token in a header)."""
        self._model_routes[(method, suffix)] = handler

        async def by_path(request: Request) -> Response:
            return await handler(request, request.path_params["token"])

        async def by_header(request: Request) -> Response:
            return await handler(request, header_token(request))

        self.router.routes.append(Route(f"/rollouts/{{token}}/v1/{suffix}", by_path, methods=[method]))
        self.router.routes.append(Route(f"/v1/{suffix}", by_header, methods=[method]))

    def _match(self, scope: Scope) -> tuple[ModelHandler, str | None, bool] | None:
        """(handler, token from the path, whether the token comes from the headers), or None."""
        path: str = scope["path"]
        if path.startswith(_ROLLOUT_PREFIX):
            token, _, rest = path[len(_ROLLOUT_PREFIX):].partition("/")
            if not token or not rest.startswith("v1/"):
                return None
            handler = self._model_routes.get((scope["method"], rest[3:]))
            return None if handler is None else (handler, token, False)
        if path.startswith("/v1/"):
            handler = self._model_routes.get((scope["method"], path[4:]))
            return None if handler is None else (handler, None, True)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            hit = self._match(scope)
            if hit is not None:
                handler, token, from_headers = hit
                scope["app"] = self
                request = Request(scope, receive)
                response = await handler(request, header_token(request) if from_headers else token)
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
