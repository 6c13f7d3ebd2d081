"""Finishing a rollout (the runner's report or the orchestrator's), and the runner's finish key."""

from __future__ import annotations

import hmac
from typing import Any

from starlette.responses import Response

from training.proxy.errors import ProxyError
from training.proxy.recorder import Recorder, RolloutState
from training.proxy.wire import JSONResponse


def finish_key_for(admin_key: str, token: str) -> str:
    """The key a rollout's runner finishes it with: an HMAC of its token under the admin key,
    so any proxy sharing the admin key can check it and nobody holding only the token can
    forge it. The orchestrator hands it to the runner alone (never to the harness)."""
    return hmac.new(admin_key.encode(), token.encode(), "sha256").hexdigest()


async def finish_rollout(recorder: Recorder, state: RolloutState, body: dict[str, Any]) -> Response:
    """Record the rollout's end from a finish body (status, reward, error, logs, timings)."""
    reward = body.get("reward")
    if reward is not None and not isinstance(reward, (int, float)):
        raise ProxyError(400, f"reward must be a number, got {reward!r}", param="reward")
    timings = body.get("timings") if isinstance(body.get("timings"), dict) else None
    out = await recorder.finish(state, status=str(body.get("status", "ok")), reward=reward,
                                error_kind=body.get("error_kind"), error=body.get("error"),
                                logs=body.get("logs"), timings=timings)
    return JSONResponse(out)
