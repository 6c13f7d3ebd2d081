"""The orchestrator's rollout API, behind the admin key (``Authorization: Bearer <admin key>``).

``POST/GET /admin/rollouts`` (a registration may carry ``budget: {max_tokens,
max_total_tokens}``, training/proxy/budget.py), ``GET /admin/rollouts/{id}``, ``.../calls``,
``.../engine-time`` and ``POST /admin/rollouts/{id}/finish``.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from training.proxy.budget import GenerationBudget
from training.proxy.errors import ProxyError, error_response
from training.proxy.fast_path import header_token
from training.proxy.routes.body import read_json
from training.proxy.routes.context import ProxyContext
from training.proxy.routes.finish import finish_key_for, finish_rollout
from training.proxy.wire import JSONResponse


def add_routes(app: FastAPI, ctx: ProxyContext) -> None:
    recorder, key, max_body_bytes, public_url = ctx.recorder, ctx.admin_key, ctx.max_body_bytes, ctx.public_url

    def check_admin(request: Request) -> None:
        given = header_token(request) or ""
        if not hmac.compare_digest(given.encode(), key.encode()):
            raise ProxyError(401, "admin key required (Authorization: Bearer <admin key>)")

    async def admin_json(request: Request) -> dict[str, Any]:
        check_admin(request)
        if not await request.body():
            return {}
        return await read_json(request, max_body_bytes)

    @app.post("/admin/rollouts")
    async def register(request: Request) -> Response:
        try:
            body = await admin_json(request)
            meta = body.get("metadata") or {}
            if not isinstance(meta, dict):
                raise ProxyError(400, "metadata must be an object", param="metadata")
            asked_budget = body.get("budget") or {}
            try:
                if not isinstance(asked_budget, dict):
                    raise TypeError("budget must be an object with max_tokens / max_total_tokens")
                budget = GenerationBudget.from_mapping(asked_budget)
            except (TypeError, ValueError) as exc:
                raise ProxyError(400, str(exc), param="budget") from exc
            state, token = await recorder.register(
                rollout_id=body.get("rollout_id"), task_id=body.get("task_id"), group_id=body.get("group_id"),
                run_id=body.get("run_id"), role=body.get("role"), harness=body.get("harness"),
                model=body.get("model"), metadata=meta, budget=budget)
            base = (public_url or str(request.base_url)).rstrip("/")
            return JSONResponse({"rollout_id": state.rollout_id, "token": token, "finish_key": finish_key_for(key, token),
                                 "base_url": f"{base}/rollouts/{token}/v1"}, status_code=201)
        except ProxyError as exc:
            return error_response("admin", exc)

    @app.get("/admin/rollouts")
    async def list_rollouts(request: Request, status: str = "live", limit: int = 1000) -> Response:
        try:
            check_admin(request)
            return JSONResponse(await recorder.list(live_only=status == "live", limit=limit))
        except ProxyError as exc:
            return error_response("admin", exc)

    def read_route(path: str, read: Callable[[str], Awaitable[Any]]) -> None:
        """``GET path``: ``read(rollout_id)`` as JSON."""
        async def handler(request: Request, rollout_id: str) -> Response:
            try:
                check_admin(request)
                return JSONResponse(await read(rollout_id))
            except ProxyError as exc:
                return error_response("admin", exc)

        app.add_api_route(path, handler, methods=["GET"])

    async def engine_time(rollout_id: str) -> dict[str, Any]:
        """The rollout's engine seconds (engine_clock.py): the scheduler leaves them out of
        the rollout's wall-clock timeout."""
        state = await recorder.state_for_id(rollout_id)
        return {"rollout_id": state.rollout_id, **state.engine_clock.snapshot()}

    read_route("/admin/rollouts/{rollout_id}", recorder.get)
    read_route("/admin/rollouts/{rollout_id}/engine-time", engine_time)
    read_route("/admin/rollouts/{rollout_id}/calls", recorder.calls)

    @app.post("/admin/rollouts/{rollout_id}/finish")
    async def admin_finish(request: Request, rollout_id: str) -> Response:
        try:
            body = await admin_json(request)
            return await finish_rollout(recorder, await recorder.state_for_id(rollout_id), body)
        except ProxyError as exc:
            return error_response("admin", exc)
