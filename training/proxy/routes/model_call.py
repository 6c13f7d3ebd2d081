"""The path every model call takes, whatever its wire API (DESIGN §10).

Authenticate the token → read and bound the body → translate to a chat body (the wire API's
``to_chat``) → set its ``max_tokens`` within the rollout's generation budget → ask the engine
(never streamed) → record the call durably → answer in the caller's format (the wire API's
``answer``, replaying a stream when one was asked for). Errors come back in the caller's format;
a call the engine aborted (finish reason ``abort``) is a retryable 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from training.engines.base import EngineError, EngineRequestError
from training.proxy.budget import (
    BUDGET_EXHAUSTED,
    BudgetExhausted,
    asked_max_tokens,
    generated_tokens,
    with_max_tokens,
)
from training.proxy.errors import Api, ProxyError, error_response
from training.proxy.fast_path import ModelHandler
from training.proxy.images import (
    ImageError,
    externalize_images,
    has_inline_images,
    images_to_text,
)
from training.proxy.recorder import CallRecord, RolloutState, token_array
from training.proxy.routes.body import may_hold_images, read_body
from training.proxy.routes.context import ProxyContext

log = logging.getLogger(__name__)

#: vLLM's finish reason of a request it aborted (veRL's asynchronous trainer aborts every
#: in-flight request at each weight sync). The answer is cut short by the engine, not the
#: policy: the caller gets a retryable 503 and re-sends the call to the new weights; the cut
#: call is recorded as an error (no sample), the rollout goes on.
ENGINE_ABORTED = "abort"
ABORTED_MESSAGE = "the engine aborted this call (a weight update paused it); retry"


@dataclass(frozen=True, slots=True)
class WireApi:
    """One model API the proxy speaks. ``to_chat(body)`` gives the engine's chat body and
    what ``answer`` needs to translate back (e.g. the Responses tool map);
    ``answer(engine_answer, body, that, stream)`` gives the caller's response.
    ``keeps_client_request``: the call's record keeps the caller's own request beside the
    chat body (every API but chat, whose request is the chat body)."""

    name: Api
    to_chat: Callable[[dict[str, Any]], tuple[dict[str, Any], Any]]
    answer: Callable[[dict[str, Any], dict[str, Any], Any, bool], Response]
    keeps_client_request: bool = True


def _samples(response: dict[str, Any]) -> tuple[Any, list[int] | None, list[float] | None, str | None]:
    """Token ids, response ids, logprobs and finish reason from a vLLM-format answer; the prompt
    ids as an ``array('q')`` (recorder.token_array; the list as it came when no array holds them)."""
    choice = (response.get("choices") or [{}])[0]
    logprobs = None
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if content:
        logprobs = [float(entry.get("logprob", 0.0)) for entry in content]
    prompt = response.get("prompt_token_ids")
    return token_array(prompt) or prompt, choice.get("token_ids"), logprobs, choice.get("finish_reason")


def _stored_response(response: dict[str, Any]) -> dict[str, Any]:
    """The engine's answer without what has its own columns (token ids, logprobs)."""
    out = {k: v for k, v in response.items() if k not in ("prompt_token_ids", "prompt_logprobs")}
    out["choices"] = [{k: v for k, v in c.items() if k not in ("token_ids", "logprobs")}
                      for c in response.get("choices") or []]
    return out


def _timed(response: Response, timing: tuple[float, float], t_start: float) -> Response:
    """Add a ``Server-Timing`` header: engine call, durable record, and the proxy's own time.
    (A module global looked up per call: bench/rl_step.py wraps it to collect the proxy's ms.)"""
    engine_ms, record_ms = timing
    total = (time.perf_counter() - t_start) * 1000
    response.headers["server-timing"] = (f"engine;dur={engine_ms:.3f}, record;dur={record_ms:.3f}, "
                                         f"proxy;dur={total - engine_ms:.3f}")
    return response


def model_calls(ctx: ProxyContext) -> Callable[[WireApi], ModelHandler]:
    """The handler factory of one app: ``model_calls(ctx)(wire)`` serves ``wire``'s calls."""
    engine = ctx.engine
    recorder = ctx.recorder
    max_body_bytes = ctx.max_body_bytes
    allowed = ctx.allowed
    blobs = ctx.blobs
    engine_sees_images = ctx.engine_sees_images

    async def model_call(wire: WireApi, request: Request, token: str | None) -> Response:
        api = wire.name
        t_start = time.perf_counter()
        try:
            state = await recorder.resolve(token)
            if state.agent_done:
                raise await recorder.refuse_after_agent_done(state)
            body, raw = await read_body(request, max_body_bytes)
            if allowed is not None and body.get("model") not in allowed:
                raise ProxyError(404, f"model {body.get('model')!r} is not served here; served: {sorted(allowed)}",
                                 param="model", code="model_not_found")
            chat, translation = wire.to_chat(body)
            recorder.begin_call(state)
            chat, grant = await _within_budget(api, state, chat, body)
            try:
                answer, timing = await _ask_engine(wire, state, chat, body, may_hold_images(raw))
            except BaseException:
                state.ledger.settle(grant, 0)
                raise
            state.ledger.settle(grant, generated_tokens(answer))
            return _timed(wire.answer(answer, body, translation, bool(body.get("stream"))), timing, t_start)
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

    async def _ask_engine(wire: WireApi, state: RolloutState, chat: dict[str, Any], body: dict[str, Any],
                          images_possible: bool = True) -> tuple[dict[str, Any], tuple[float, float]]:
        """Ask the engine and record the call; returns the answer and (engine ms, record ms)."""
        api = wire.name
        stored_request = dict(chat)
        if wire.keeps_client_request:
            stored_request["_client_request"] = body
        if images_possible and has_inline_images(stored_request):  # images by content hash in side files, not in the DB
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
        if finish == ENGINE_ABORTED:
            await recorder.record(state, CallRecord(api=api, model=body.get("model"), request=stored_request,
                                                    response=None, latency_ms=ms, status="error",
                                                    error=ABORTED_MESSAGE, policy_version=engine.policy_version))
            raise ProxyError(503, ABORTED_MESSAGE, code="engine_paused", retry_after=1)
        # The answer goes on without its prompt ids (no reader of it uses them: they are the
        # record's), so the engine's list of ~60k ints is freed here, before any await: many
        # such lists alive at once made each young-generation GC pass walk all of them.
        answer = {k: v for k, v in answer.items() if k != "prompt_token_ids"}
        t1 = time.perf_counter()
        await recorder.record(state, CallRecord(
            api=api, model=body.get("model"), request=stored_request, response=_stored_response(answer),
            prompt_token_ids=prompt_ids, response_token_ids=response_ids, response_logprobs=logprobs,
            finish_reason=finish, usage=answer.get("usage"), latency_ms=ms,
            policy_version=answer.get("policy_version", engine.policy_version),
        ))
        return answer, (ms, (time.perf_counter() - t1) * 1000)

    def handler(wire: WireApi) -> ModelHandler:
        # A lambda, not an ``async def``: the server awaits model_call's own coroutine.
        return lambda request, token: model_call(wire, request, token)

    return handler
