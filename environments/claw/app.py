"""The HTTP face of the claw services: one ASGI app hosting any subset of services under
``/<service>/`` prefixes, with audit/state/reset routes and JSON errors (never a crash).

Routes are generated from each :class:`~environments.claw.core.ServiceSpec`; request bodies
are parsed and validated here (pydantic) so every failure becomes a helpful 4xx JSON body.
The app is plain Starlette (the toolkit FastAPI is built on): the services need none of
FastAPI's dependency injection, and Starlette imports ~2x faster, which matters because
every rollout starts its own service process.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from pydantic import ValidationError

from environments.claw.core import (
    Action, AuditLog, ClawError, FixtureError, Store, describe_validation_error, schema_hint,
)
from environments.claw.fixtures import FixtureSource
from environments.claw.services import get_spec, parse_services
from environments.claw.tools import tool_entry

logger = logging.getLogger(__name__)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _error(exc: ClawError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def _json_body(request: Request, where: str) -> Any:
    """The request's JSON body ({} when empty); NaN/Infinity and absurd nesting rejected."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = "too deeply nested" if isinstance(exc, RecursionError) else str(exc)
        raise ClawError(422, "invalid_json", f"{where}: body is not valid JSON ({reason})",
                        'send the arguments as a JSON object, e.g. {"id": "m1"}') from None


class ClawApp:
    """Live stores of the hosted services plus the shared audit log."""

    def __init__(self, services: list[str], fixtures: FixtureSource) -> None:
        self.services = services
        self.fixtures = fixtures
        self.audit = AuditLog()
        self.stores = {name: Store(get_spec(name), self.audit, fixtures.load(name)) for name in services}

    def reset(self, service: str, fixtures: dict[str, Any] | None) -> None:
        data = self.fixtures.load(service) if fixtures is None else fixtures
        self.stores[service].load(data)

    async def call(self, store: Store, action: Action, request: Request) -> JSONResponse:
        tool = store.spec.tool_name(action.name)
        try:
            data = await _json_body(request, tool)
        except ClawError as exc:
            event = store.begin_call(action.name, None)
            store.end_call(event, exc.status, exc.message)
            return _error(exc)
        event = store.begin_call(action.name, data)
        try:
            if not isinstance(data, dict):
                raise ClawError(422, "invalid_arguments",
                                f"{tool}: arguments must be a JSON object, got {type(data).__name__}",
                                schema_hint(action.args))
            try:
                args = action.args.model_validate(data)
            except ValidationError as exc:
                raise ClawError(422, "invalid_arguments", describe_validation_error(tool, exc),
                                schema_hint(action.args)) from None
            result = action.handler(store, args)
        except ClawError as exc:
            store.end_call(event, exc.status, exc.message)
            return _error(exc)
        except Exception:  # a bug in a handler must not kill the rollout
            logger.exception("claw %s failed", tool)
            store.end_call(event, 500, "internal error")
            return JSONResponse({"error": {"type": "internal_error", "message": f"{tool}: internal error"}},
                                status_code=500)
        store.end_call(event, 200)
        return JSONResponse({"result": result})


def _action_endpoint(claw: ClawApp, store: Store, action: Action):  # noqa: ANN202
    async def endpoint(request: Request) -> JSONResponse:
        return await claw.call(store, action, request)

    endpoint.__name__ = f"{store.spec.name}_{action.name}"
    return endpoint


def _service_routes(claw: ClawApp, name: str) -> list[Route]:
    store = claw.stores[name]
    spec = store.spec

    async def audit(request: Request) -> JSONResponse:
        try:
            since = int(request.query_params.get("since", "0"))
        except ValueError:
            return _error(ClawError(422, "bad_request", "'since' must be an integer"))
        return JSONResponse({"service": name, "events": claw.audit.for_service(name, since)})

    async def state(request: Request) -> JSONResponse:
        return JSONResponse({"service": name, "state": store.snapshot()})

    async def reset(request: Request) -> JSONResponse:
        try:
            body = await _json_body(request, f"{name}/reset")
            if not isinstance(body, dict):
                raise ClawError(422, "bad_request", f"{name}/reset: body must be a JSON object")
            fixtures = body.get("fixtures")
            if fixtures is not None and not isinstance(fixtures, dict):
                raise ClawError(422, "bad_request", f"{name}/reset: 'fixtures' must be a JSON object")
            claw.reset(name, fixtures)
        except FixtureError as exc:
            return _error(ClawError(422, "bad_request", str(exc)))
        except ClawError as exc:
            return _error(exc)
        return JSONResponse({"ok": True, "service": name})

    routes = [
        Route(f"/{name}/audit", audit, methods=["GET"]),
        Route(f"/{name}/state", state, methods=["GET"]),
        Route(f"/{name}/reset", reset, methods=["POST"]),
    ]
    for action in spec.actions.values():
        routes.append(Route(f"/{name}/{action.name}", _action_endpoint(claw, store, action), methods=["POST"]))

    tools = ", ".join(spec.tool_name(a) for a in spec.actions)

    async def fallback(request: Request) -> JSONResponse:
        action = request.path_params["rest"].strip("/")
        if action in spec.actions or action in ("reset",):
            return _error(ClawError(405, "method_not_allowed",
                                    f"{request.method} /{name}/{action}: use POST with a JSON object body"))
        if action in ("audit", "state"):
            return _error(ClawError(405, "method_not_allowed", f"{request.method} /{name}/{action}: use GET"))
        return _error(ClawError(404, "unknown_tool", f"{name} has no action {action!r}",
                                f"tools of {name}: {tools}"))

    routes.append(Route(f"/{name}/{{rest:path}}", fallback, methods=ALL_METHODS))
    return routes


def create_app(services: str | list[str], fixtures: str | FixtureSource | None = None) -> Starlette:
    """The app hosting ``services`` with fixtures from ``fixtures`` (dir, file or source).

    Raises ``UnknownServiceError`` / ``FixtureError`` (one line naming the problem).
    """
    names = parse_services(services)
    source = fixtures if isinstance(fixtures, FixtureSource) else FixtureSource(fixtures)
    claw = ClawApp(names, source)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "services": names})

    async def tools(request: Request) -> JSONResponse:
        return JSONResponse({"tools": [tool_entry(get_spec(n), a) for n in names for a in get_spec(n).actions]})

    async def audit(request: Request) -> JSONResponse:
        return JSONResponse({"events": claw.audit.events})

    async def reset_all(request: Request) -> JSONResponse:
        try:
            body = await _json_body(request, "reset")
            fixtures_by_service = body.get("fixtures") if isinstance(body, dict) else None
            if fixtures_by_service is not None and not isinstance(fixtures_by_service, dict):
                raise ClawError(422, "bad_request", "reset: 'fixtures' must be an object keyed by service")
            for name in names:
                claw.reset(name, (fixtures_by_service or {}).get(name) if fixtures_by_service else None)
        except FixtureError as exc:
            return _error(ClawError(422, "bad_request", str(exc)))
        except ClawError as exc:
            return _error(exc)
        return JSONResponse({"ok": True, "services": names})

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/tools", tools, methods=["GET"]),
        Route("/audit", audit, methods=["GET"]),
        Route("/reset", reset_all, methods=["POST"]),
    ]
    for name in names:
        routes.extend(_service_routes(claw, name))

    hosted = ", ".join(names)

    async def unknown(request: Request) -> JSONResponse:
        head = request.path_params["path"].strip("/").split("/", 1)[0]
        return _error(ClawError(404, "unknown_service", f"no service {head!r} here (hosted: {hosted})",
                                "tools are called as POST /<service>/<action>; GET /tools lists them"))

    routes.append(Route("/{path:path}", unknown, methods=ALL_METHODS))
    app = Starlette(routes=routes)
    app.state.claw = claw
    return app
