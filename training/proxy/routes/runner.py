"""What the in-sandbox runner calls with its rollout token: ``POST /rollouts/<token>/finish``
(with the finish key), ``POST /rollouts/<token>/agent-done`` and ``GET /rollouts/<token>/engine-time``."""

from __future__ import annotations

import hmac

from fastapi import FastAPI, Request
from starlette.responses import Response

from environments.runner.finish import FINISH_KEY_HEADER
from training.proxy.errors import ProxyError, error_response
from training.proxy.routes.body import read_json
from training.proxy.routes.context import ProxyContext
from training.proxy.routes.finish import finish_key_for, finish_rollout
from training.proxy.wire import JSONResponse


def add_routes(app: FastAPI, ctx: ProxyContext) -> None:
    recorder, key, max_body_bytes = ctx.recorder, ctx.admin_key, ctx.max_body_bytes

    @app.post("/rollouts/{token}/finish")
    async def token_finish(request: Request, token: str) -> Response:
        """The runner's report. It must carry the rollout's finish key (``X-OpenForge-Finish-Key``),
        which only the runner holds: the token alone — all the agent has — cannot finish a rollout."""
        try:
            state = await recorder.resolve(token)
            given = request.headers.get(FINISH_KEY_HEADER, "")
            if not hmac.compare_digest(given.encode(), finish_key_for(key, token).encode()):
                raise ProxyError(403, "finishing a rollout needs its finish key (the runner's, not the token)",
                                 code="finish_key_required")
            return await finish_rollout(recorder, state, await read_json(request, max_body_bytes))
        except ProxyError as exc:
            return error_response("admin", exc)

    @app.post("/rollouts/{token}/agent-done")
    async def token_agent_done(request: Request, token: str) -> Response:
        """The runner's agent phase is over: model calls with this token are refused from now."""
        try:
            state = await recorder.resolve(token)
            await recorder.mark_agent_done(state)
            return JSONResponse({"rollout_id": state.rollout_id, "model_calls": "revoked"})
        except ProxyError as exc:
            return error_response("admin", exc)

    @app.get("/rollouts/{token}/engine-time")
    async def token_engine_time(request: Request, token: str) -> Response:
        """Seconds the engine has spent answering this rollout (engine_clock.py): the runner
        leaves them out of the agent's timeout."""
        try:
            state = await recorder.resolve(token)
            return JSONResponse({"rollout_id": state.rollout_id, **state.engine_clock.snapshot()})
        except ProxyError as exc:
            return error_response("admin", exc)
