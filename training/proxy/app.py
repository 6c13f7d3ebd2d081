"""The proxy's HTTP routes (DESIGN §10): thin handlers over the translators and the recorder.

Model APIs, per rollout: ``/rollouts/<token>/v1/{chat/completions,responses,messages,models}``
and the same under ``/v1/...`` with the token as ``Authorization: Bearer`` or ``x-api-key``.
Admin API (bearer admin key): ``POST/GET /admin/rollouts`` (a registration may carry
``budget: {max_tokens, max_total_tokens}``, see training/proxy/budget.py), ``GET /admin/rollouts/{id}``,
``GET /admin/rollouts/{id}/calls``, ``POST /admin/rollouts/{id}/finish``; the runner finishes
with ``POST /rollouts/<token>/finish``. ``GET /healthz`` is open.

Every model call: authenticate the token → read and bound the body → translate to a chat
body → set its ``max_tokens`` within the rollout's generation budget → ask the engine (never
streamed) → record the call durably → answer in the caller's format, replaying a stream when
one was asked for. Errors come back in the caller's format.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from starlette.responses import Response

from environments.runner.finish import FINISH_KEY_HEADER
from openforge.settings import get_settings
from training.engines.base import ChatEngine, EngineError, EngineRequestError
from training.proxy.budget import (
    BUDGET_EXHAUSTED,
    BudgetExhausted,
    GenerationBudget,
    asked_max_tokens,
    generated_tokens,
    with_max_tokens,
)
from training.proxy.errors import Api, ProxyError, error_response
from training.proxy.fast_path import ProxyApp, header_token
from training.proxy.images import (
    BlobStore,
    ImageError,
    accepts_images,
    externalize_images,
    has_inline_images,
    images_to_text,
)
from training.proxy.recorder import CallRecord, Recorder, RolloutState
from training.proxy.translate_chat import (
    chat_for_client,
    chat_for_engine,
    chat_stream_chunks,
)
from training.proxy.translate_messages import (
    chat_to_messages,
    messages_stream_events,
    messages_to_chat,
)
from training.proxy.translate_responses import (
    chat_to_responses,
    responses_stream_events,
    responses_to_chat,
)
from training.proxy.wire import JSONResponse, now, sse

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def _read_json(request: Request, limit: int) -> dict[str, Any]:
    return (await _read_body(request, limit))[0]


def _may_hold_images(raw: bytes) -> bool:
    """False only when no part of the body can be an image part: its JSON never spells
    "image", not even with \\u escapes of i, m, a, g or e (all \\u006X). A byte search
    instead of a walk over the whole history on every call."""
    return b"image" in raw or b"\\u006" in raw


async def _read_body(request: Request, limit: int) -> tuple[dict[str, Any], bytes]:
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


def _samples(response: dict[str, Any]) -> tuple[list[int] | None, list[int] | None, list[float] | None, str | None]:
    """Token ids, response ids, logprobs and finish reason from a vLLM-format answer."""
    choice = (response.get("choices") or [{}])[0]
    logprobs = None
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if content:
        logprobs = [float(entry.get("logprob", 0.0)) for entry in content]
    return response.get("prompt_token_ids"), choice.get("token_ids"), logprobs, choice.get("finish_reason")


def _stored_response(response: dict[str, Any]) -> dict[str, Any]:
    """The engine's answer without what has its own columns (token ids, logprobs)."""
    out = {k: v for k, v in response.items() if k not in ("prompt_token_ids", "prompt_logprobs")}
    out["choices"] = [{k: v for k, v in c.items() if k not in ("token_ids", "logprobs")}
                      for c in response.get("choices") or []]
    return out




def finish_key_for(admin_key: str, token: str) -> str:
    """The key a rollout's runner finishes it with: an HMAC of its token under the admin key,
    so any proxy sharing the admin key can check it and nobody holding only the token can
    forge it. The orchestrator hands it to the runner alone (never to the harness)."""
    return hmac.new(admin_key.encode(), token.encode(), "sha256").hexdigest()


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
    allowed = frozenset(served_models) if served_models else None
    blobs = BlobStore(blobs_dir or settings.home_dir / "blobs")
    engine_sees_images = accepts_images(engine)

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

    # -- model calls -------------------------------------------------------------------------
    async def model_call(api: Api, request: Request, token: str | None) -> Response:
        t_start = time.perf_counter()
        try:
            state = await recorder.resolve(token)
            if state.agent_done:
                raise await recorder.refuse_after_agent_done(state)
            body, raw = await _read_body(request, max_body_bytes)
            if allowed is not None and body.get("model") not in allowed:
                raise ProxyError(404, f"model {body.get('model')!r} is not served here; served: {sorted(allowed)}",
                                 param="model", code="model_not_found")
            tool_map = None
            if api == "chat":
                chat = chat_for_engine(body)
            elif api == "responses":
                chat, tool_map = responses_to_chat(body)
            else:
                chat = messages_to_chat(body)
            recorder.begin_call(state)
            chat, grant = await _within_budget(api, state, chat, body)
            try:
                answer, timing = await _ask_engine(api, state, chat, body, _may_hold_images(raw))
            except BaseException:
                state.ledger.settle(grant, 0)
                raise
            state.ledger.settle(grant, generated_tokens(answer))
            stream = bool(body.get("stream"))
            if api == "chat":
                if stream:
                    payload = b"".join(sse(c) for c in chat_stream_chunks(answer, body)) + sse("[DONE]")
                    return _timed(Response(payload, media_type="text/event-stream", headers=_SSE_HEADERS), timing, t_start)
                return _timed(JSONResponse(chat_for_client(answer, body)), timing, t_start)
            if api == "responses":
                out = chat_to_responses(answer, body, tool_map)
                events = responses_stream_events(out) if stream else None
            else:
                out = chat_to_messages(answer, body)
                events = messages_stream_events(out) if stream else None
            if events is not None:
                payload = b"".join(sse(data, event=kind) for kind, data in events)
                return _timed(Response(payload, media_type="text/event-stream", headers=_SSE_HEADERS), timing, t_start)
            return _timed(JSONResponse(out), timing, t_start)
        except ProxyError as exc:
            return error_response(api, exc)
        except Exception as exc:
            log.exception("unexpected error serving a %s call", api)
            return error_response(api, ProxyError(500, f"proxy internal error: {type(exc).__name__}: {exc}"))

    async def _within_budget(api: str, state: RolloutState, chat: dict[str, Any],
                             body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        """``chat`` asking for the tokens the rollout's budget grants; a spent budget is recorded and refused."""
        try:
            grant = state.ledger.reserve(asked_max_tokens(chat))
        except BudgetExhausted as exc:
            summary = {k: v for k, v in chat.items() if k not in ("messages", "tools")}
            summary["n_messages"] = len(chat.get("messages") or [])
            await recorder.record(state, CallRecord(api=api, model=body.get("model"), request=summary, response=None,
                                                    status="error", error=str(exc),
                                                    policy_version=engine.policy_version))
            log.info("rollout %s: call refused, %s", state.rollout_id, exc)
            raise ProxyError(400, str(exc), code=BUDGET_EXHAUSTED) from exc
        return with_max_tokens(chat, grant), grant

    async def _ask_engine(api: str, state: RolloutState, chat: dict[str, Any], body: dict[str, Any],
                          may_hold_images: bool = True) -> tuple[dict[str, Any], tuple[float, float]]:
        """Ask the engine and record the call; returns the answer and (engine ms, record ms)."""
        stored_request = dict(chat)
        if api != "chat":
            stored_request["_client_request"] = body
        if may_hold_images and has_inline_images(stored_request):  # images by content hash in side files, not in the DB
            try:
                stored_request, _ = await asyncio.to_thread(externalize_images, stored_request, blobs)
            except ImageError as exc:
                raise ProxyError(400, str(exc), param="messages") from exc
            if not engine_sees_images:
                chat = images_to_text(chat)
        t0 = time.perf_counter()
        state.engine_clock.call_started()
        try:
            # vLLM's extras: the sample needs the engine's own ids and logprobs (DESIGN §5).
            answer = await engine.chat_completions({**chat, "return_token_ids": True, "logprobs": True})
        except EngineError as exc:
            ms = (time.perf_counter() - t0) * 1000
            await recorder.record(state, CallRecord(api=api, model=body.get("model"), request=stored_request,
                                                    response=None, latency_ms=ms, status="error",
                                                    error=f"{exc.kind}: {exc}", engine_error=True,
                                                    policy_version=engine.policy_version))
            raise ProxyError(exc.status_code if exc.status_code >= 500 else 502, f"engine error: {exc}") from exc
        except EngineRequestError as exc:
            ms = (time.perf_counter() - t0) * 1000
            await recorder.record(state, CallRecord(api=api, model=body.get("model"), request=stored_request,
                                                    response=None, latency_ms=ms, status="error",
                                                    error=f"engine rejected the request: {exc}",
                                                    policy_version=engine.policy_version))
            raise ProxyError(exc.status_code, f"engine rejected the request: {exc}", param=exc.param) from exc
        finally:
            state.engine_clock.call_ended()
        ms = (time.perf_counter() - t0) * 1000
        prompt_ids, response_ids, logprobs, finish = _samples(answer)
        t1 = time.perf_counter()
        await recorder.record(state, CallRecord(
            api=api, model=body.get("model"), request=stored_request, response=_stored_response(answer),
            prompt_token_ids=prompt_ids, response_token_ids=response_ids, response_logprobs=logprobs,
            finish_reason=finish, usage=answer.get("usage"), latency_ms=ms,
            policy_version=answer.get("policy_version", engine.policy_version),
        ))
        return answer, (ms, (time.perf_counter() - t1) * 1000)

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

    async def count_tokens(request: Request, token: str | None) -> Response:
        """Claude Code asks for token counts; answer with an estimate (≈4 bytes a token)."""
        try:
            await recorder.resolve(token)
            body = await _read_json(request, max_body_bytes)
            return JSONResponse({"input_tokens": max(1, len(orjson.dumps(body)) // 4)})
        except ProxyError as exc:
            return error_response("messages", exc)

    routes: list[tuple[str, str, Callable[[Request, str | None], Awaitable[Response]]]] = [
        ("POST", "chat/completions", lambda r, t: model_call("chat", r, t)),
        ("POST", "responses", lambda r, t: model_call("responses", r, t)),
        ("POST", "messages", lambda r, t: model_call("messages", r, t)),
        ("POST", "messages/count_tokens", count_tokens),
        ("GET", "models", models),
    ]
    for method, suffix, handler in routes:
        app.add_model_route(method, suffix, handler)

    # -- lifecycle ---------------------------------------------------------------------------
    def check_admin(request: Request) -> None:
        given = header_token(request) or ""
        if not hmac.compare_digest(given.encode(), key.encode()):
            raise ProxyError(401, "admin key required (Authorization: Bearer <admin key>)")

    async def admin_json(request: Request) -> dict[str, Any]:
        check_admin(request)
        if not await request.body():
            return {}
        return await _read_json(request, max_body_bytes)

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

    @app.get("/admin/rollouts/{rollout_id}")
    async def get_rollout(request: Request, rollout_id: str) -> Response:
        try:
            check_admin(request)
            return JSONResponse(await recorder.get(rollout_id))
        except ProxyError as exc:
            return error_response("admin", exc)

    @app.get("/admin/rollouts/{rollout_id}/engine-time")
    async def get_engine_time(request: Request, rollout_id: str) -> Response:
        """The rollout's engine seconds (engine_clock.py): the scheduler leaves them out of
        the rollout's wall-clock timeout."""
        try:
            check_admin(request)
            state = await recorder.state_for_id(rollout_id)
            return JSONResponse({"rollout_id": state.rollout_id, **state.engine_clock.snapshot()})
        except ProxyError as exc:
            return error_response("admin", exc)

    @app.get("/admin/rollouts/{rollout_id}/calls")
    async def get_calls(request: Request, rollout_id: str) -> Response:
        try:
            check_admin(request)
            return JSONResponse(await recorder.calls(rollout_id))
        except ProxyError as exc:
            return error_response("admin", exc)

    async def finish(state: RolloutState, body: dict[str, Any]) -> Response:
        reward = body.get("reward")
        if reward is not None and not isinstance(reward, (int, float)):
            raise ProxyError(400, f"reward must be a number, got {reward!r}", param="reward")
        timings = body.get("timings") if isinstance(body.get("timings"), dict) else None
        out = await recorder.finish(state, status=str(body.get("status", "ok")), reward=reward,
                                    error_kind=body.get("error_kind"), error=body.get("error"),
                                    logs=body.get("logs"), timings=timings)
        return JSONResponse(out)

    @app.post("/admin/rollouts/{rollout_id}/finish")
    async def admin_finish(request: Request, rollout_id: str) -> Response:
        try:
            body = await admin_json(request)
            return await finish(await recorder.state_for_id(rollout_id), body)
        except ProxyError as exc:
            return error_response("admin", exc)

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
            return await finish(state, await _read_json(request, max_body_bytes))
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

    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"ok": True, "time": now()})

    return app


def _timed(response: Response, timing: tuple[float, float], t_start: float) -> Response:
    """Add a ``Server-Timing`` header: engine call, durable record, and the proxy's own time."""
    engine_ms, record_ms = timing
    total = (time.perf_counter() - t_start) * 1000
    response.headers["server-timing"] = (f"engine;dur={engine_ms:.3f}, record;dur={record_ms:.3f}, "
                                         f"proxy;dur={total - engine_ms:.3f}")
    return response

