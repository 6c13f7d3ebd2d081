"""The proxy app (DESIGN §10): :func:`create_app` builds the shared context and assembles the
routes, one module a concern (training/proxy/routes/).

Model APIs, per rollout: ``/rollouts/<token>/v1/{chat/completions,responses,messages,models}``
and the same under ``/v1/...`` with the token as ``Authorization: Bearer`` or ``x-api-key``
(routes/chat.py, responses.py, messages.py, models.py over routes/model_call.py). Admin API
(bearer admin key, routes/admin.py): ``POST/GET /admin/rollouts``, ``GET /admin/rollouts/{id}``,
``.../calls``, ``.../engine-time``, ``POST /admin/rollouts/{id}/finish``; the runner finishes
with ``POST /rollouts/<token>/finish`` (routes/runner.py). ``GET /healthz`` is open.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from openforge.settings import get_settings
from training.engines.base import ChatEngine
from training.proxy.budget import GenerationBudget
from training.proxy.fast_path import ProxyApp
from training.proxy.images import BlobStore, accepts_images
from training.proxy.recorder import Recorder
from training.proxy.routes import (
    admin,
    chat,
    health,
    messages,
    models,
    responses,
    runner,
)
from training.proxy.routes.context import ProxyContext
from training.proxy.routes.finish import finish_key_for
from training.proxy.routes.model_call import model_calls

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app", "finish_key_for"]


def create_app(engine: ChatEngine, *, db_url: str | None = None, admin_key: str | None = None,
               public_url: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               max_calls_per_rollout: int = 2000, served_models: list[str] | None = None,
               max_tokens_cap: int | None = None, max_total_tokens: int | None = None,
               close_engine: bool = False, migrate: bool = True, blobs_dir: Path | None = None,
               linear_storage: bool = True) -> FastAPI:
    """The proxy app for ``engine``.

    ``db_url`` defaults to the settings' task DB; ``admin_key`` to ``OPENFORGE_ADMIN_KEY`` or a
    fresh random key (``app.state.admin_key``). ``public_url`` is the address sandboxes reach
    the proxy at (default: the address the admin call came in on). With ``served_models``
    set, a call naming another model is refused (404); by default any name is accepted and
    the engine serves its own model. ``max_tokens_cap`` (per call) and ``max_total_tokens`` (generated
    tokens per rollout) are the generation budget of rollouts whose registration names none
    (training/proxy/budget.py); every call's ``max_tokens`` is set within it, whatever the
    harness sent (Claude Code asks for up to 128k). ``close_engine`` closes the
    engine on shutdown. Inline images are stored by content hash under ``blobs_dir`` (default
    ``OPENFORGE_HOME/blobs``) and recorded by reference (training/proxy/images.py); engines
    whose ``accepts_images`` is False get a text placeholder instead. ``linear_storage`` (default)
    stores a call that extends an earlier one as a reference plus its new suffix
    (storage/calls.py); False stores every call in full (what the bench compares against).
    """
    settings = get_settings()
    key = admin_key or settings.admin_key or secrets.token_urlsafe(24)
    recorder = Recorder(db_url or settings.db_url, max_calls_per_rollout=max_calls_per_rollout,
                        logs_dir=settings.rollouts_dir, migrate=migrate,
                        default_budget=GenerationBudget(max_tokens=max_tokens_cap, max_total_tokens=max_total_tokens),
                        linear=linear_storage)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await recorder.start()
        log.info("proxy recording to %s", recorder.db_url)
        try:
            yield
        finally:
            await recorder.stop()
            if close_engine:
                await engine.aclose()
            elif callable(release := getattr(engine, "release_loop", None)):
                await release()  # pools bound to this server's event loop die with it

    app = ProxyApp(title="OpenForge recording proxy", lifespan=lifespan, docs_url=None, redoc_url=None,
                   openapi_url=None)
    app.state.admin_key = key
    app.state.recorder = recorder
    app.state.engine = engine

    ctx = ProxyContext(engine=engine, recorder=recorder, admin_key=key, max_body_bytes=max_body_bytes,
                       allowed=frozenset(served_models) if served_models else None,
                       blobs=BlobStore(blobs_dir or settings.home_dir / "blobs"),
                       engine_sees_images=accepts_images(engine), public_url=public_url)
    handler = model_calls(ctx)
    chat.add_routes(app, handler)
    responses.add_routes(app, handler)
    messages.add_routes(app, handler, ctx)
    models.add_routes(app, ctx)
    admin.add_routes(app, ctx)
    runner.add_routes(app, ctx)
    health.add_routes(app)
    return app
