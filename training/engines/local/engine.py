"""``LocalEngine``: a Hugging Face causal LM served in-process as a :class:`ChatEngine`.

Takes OpenAI chat requests (messages with tool calls and tool results, ``tools``, sampling
parameters, ``n``, ``stop``, ``seed``) and answers in vLLM's wire format: top-level
``prompt_token_ids``, ``choices[i].token_ids``, ``choices[i].logprobs.content[j].logprob``,
``finish_reason`` and ``usage``, plus ``policy_version`` (the weights version the request
was admitted under; ``policy_version_final`` too when the weights changed mid-generation).
Token ids and logprobs are returned when asked for (``return_token_ids`` / ``logprobs``),
as vLLM does; the proxy always asks.

Semantics worth knowing:

- The context is ``max_model_len``: the model's own window, except that the default model
  (and any model given ``context_length``) is served with a YaRN-extended window of
  :data:`~training.engines.local.context.DEFAULT_CONTEXT_LENGTH` tokens
  (:mod:`training.engines.local.context`); trainers copying ``engine.model`` see the same.
- ``max_tokens`` larger than what is left of the context is clamped (``finish_reason
  "length"`` when hit); a prompt that alone fills the context raises
  :class:`EngineRequestError` (a policy error for the rollout, DESIGN §5).
- With ``tools`` (and ``tool_choice`` not ``"none"``), Hermes-style ``<tool_call>`` blocks in
  the output become ``message.tool_calls`` with ``finish_reason "tool_calls"``; output that
  does not parse stays plain content. ``tool_choice`` is not enforced (no guided decoding).
- The reported logprob is that of the sampling distribution after temperature (see
  :mod:`training.engines.local.sampling`).

All model work happens on the :class:`Batcher` worker thread; coroutines only wait on its
futures, so the event loop never blocks on a forward pass.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from training.cpu import available_cores
from training.engines.base import EngineError, EngineRequestError
from training.engines.local.batcher import (
    Batcher,
    BatcherStats,
    GenerationRequest,
    GenerationResult,
)
from training.engines.local.context import policy_config
from training.engines.local.prefix_cache import PrefixCache
from training.engines.local.prompt import render_prompt
from training.engines.local.sampling import sampling_params_from_body
from training.engines.local.tools import parse_tool_calls
from training.engines.model_store import (
    resolve_model,
)

log = logging.getLogger(__name__)


def default_cpu_threads() -> int:
    """Intra-op threads the engine takes on CPU by default: half the cores, at least one.

    The engine decodes while the rollouts' harnesses, sandboxes and verifiers run on the same
    cores. A parallel region waits for its slowest thread, so an engine with a thread per
    core stalls every small decode op whenever a harness process holds one of the cores:
    on 2 cores with 8 react rollouts running, a decode step took ~2.2 s with 2 threads and
    ~0.2-0.4 s with 1 (same process, same load; issue 13's note). A synchronous RL run's
    engine, which decodes while its trainer waits, takes every core instead
    (``training.workflows.common.local_engine``).
    """
    return max(1, available_cores() // 2)


def _default_dtype(device: str) -> torch.dtype:
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


class LocalEngine:
    """An in-process policy engine with dynamic batching and in-place weight updates."""

    #: Text-only models: the proxy replaces image parts by a placeholder (training/proxy/images.py).
    accepts_images = False

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        max_batch_size: int = 8,
        *,
        dtype: torch.dtype | None = None,
        model_name: str | None = None,
        max_model_len: int | None = None,
        context_length: int | None = None,
        prefix_cache_tokens: int = 24576,
        seed: int | None = None,
        threads: int | None = None,
        model: Any | None = None,
        tokenizer: Any | None = None,
    ) -> None:
        """Load ``model_path`` (default: :func:`resolve_model`), or serve ``model``/``tokenizer`` given as objects.

        ``context_length`` extends a plain-RoPE model loaded from a path to that many tokens
        (default: :data:`DEFAULT_CONTEXT_LENGTH` for the default model, else the model's own
        window); ``max_model_len`` caps what is served. ``context_extension`` is the rope
        parameters set, or None. ``prefix_cache_tokens`` bounds the prompt KV kept for reuse
        by later prompts with the same head (0: none; see ``prefix_cache``). ``threads`` is
        the intra-op thread count of the engine's forward passes on CPU (None: torch's
        default, every core; see :func:`default_cpu_threads`).
        """
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = device
        self.dtype = dtype or _default_dtype(device)
        self.context_extension: dict[str, Any] | None = None
        if model is None or tokenizer is None:
            source = resolve_model(model_path)
            started = time.monotonic()
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(source)
            if model is None:
                config, self.context_extension = policy_config(source, context_length)
                model = AutoModelForCausalLM.from_pretrained(source, config=config, dtype=self.dtype)
            log.info("loaded %s in %.1fs", source, time.monotonic() - started)
            default_name = Path(source).name if Path(source).exists() else source
        else:
            default_name = getattr(model.config, "_name_or_path", "") or "local"
        self.model = model.to(device=device, dtype=self.dtype).eval()
        self.tokenizer = tokenizer
        self.model_name = model_name or Path(str(default_name)).name or "local"
        config_len = getattr(self.model.config, "max_position_embeddings", None)
        self.max_model_len = int(max_model_len or config_len or 2048)
        self._batcher = Batcher(
            self.model,
            eos_token_ids=self._eos_ids(),
            decode=lambda ids: self.tokenizer.decode(ids, skip_special_tokens=True),
            max_batch_size=max_batch_size,
            seed=seed,
            prefix_cache=PrefixCache(max_tokens=prefix_cache_tokens) if prefix_cache_tokens > 0 else None,
            threads=threads,
        )

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, list | tuple):
                ids.update(int(i) for i in source)
        if not ids:
            raise EngineError(f"model {self.model_name}: no end-of-sequence token id", kind="unsupported_model")
        return ids

    # ------------------------------------------------------------------ ChatEngine
    @property
    def policy_version(self) -> int:
        return self._batcher.policy_version

    @property
    def stats(self) -> BatcherStats:
        return self._batcher.stats

    @property
    def queued(self) -> int:
        """Requests waiting for a place in the batch."""
        return self._batcher.queued

    async def list_models(self) -> list[str]:
        return [self.model_name]

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        params = sampling_params_from_body(body)
        tools = body.get("tools") or None
        prompt_ids = await asyncio.to_thread(
            render_prompt,
            self.tokenizer,
            body.get("messages"),
            tools,
            add_generation_prompt=bool(body.get("add_generation_prompt", True)),
            continue_final_message=bool(body.get("continue_final_message", False)),
        )
        room = self.max_model_len - len(prompt_ids)
        if room <= 0:
            raise EngineRequestError(
                f"context overflow: the prompt has {len(prompt_ids)} tokens and "
                f"{self.model_name}'s context is {self.max_model_len} tokens",
                param="messages",
            )
        max_new = min(params.max_tokens or room, room)
        request = GenerationRequest(prompt_ids=prompt_ids, params=params, max_new_tokens=max_new)
        result = await asyncio.wrap_future(self._batcher.submit(request))
        parse_tools = bool(tools) and body.get("tool_choice") != "none"
        return self._response(body, prompt_ids, result, parse_tools)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        self._batcher.close()
        s = self._batcher.stats
        if s.requests_done:
            log.info("local engine: %d requests; prefill %d passes, %.1f s (%d tokens run, %d reused); "
                     "decode %d steps, %.1f s (%d tokens, up to %d rows)", s.requests_done, s.prefill_passes,
                     s.prefill_seconds, s.prefilled_tokens, s.prefix_reused_tokens, s.decode_steps, s.decode_seconds,
                     s.generated_tokens, s.max_rows)

    # --------------------------------------------------------------- weight updates
    def update_weights(self, source: Mapping[str, torch.Tensor] | torch.nn.Module | str | os.PathLike[str]) -> int:
        """Copy new weights into the served model between forward passes; returns the new version.

        ``source`` is a state dict, a model with the same architecture, or an HF checkpoint
        folder. Requests in flight continue with the new weights from their next token.
        """
        if isinstance(source, torch.nn.Module):
            state = source.state_dict()
        elif isinstance(source, str | os.PathLike):
            from transformers import AutoModelForCausalLM

            state = AutoModelForCausalLM.from_pretrained(str(source), dtype=self.dtype).state_dict()
        else:
            state = dict(source)
        with self._batcher.weights_lock, torch.no_grad():
            missing, unexpected = self.model.load_state_dict(state, strict=False)
            tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
            if set(missing) - tied or unexpected:
                raise ValueError(
                    f"update_weights: state dict does not fit {self.model_name} "
                    f"(missing={sorted(set(missing) - tied)[:5]}, unexpected={sorted(unexpected)[:5]})"
                )
            self._batcher.policy_version += 1
            version = self._batcher.policy_version
        log.info("local engine weights updated to policy version %d", version)
        return version

    async def aupdate_weights(self, source: Mapping[str, torch.Tensor] | torch.nn.Module | str | os.PathLike[str]) -> int:
        return await asyncio.to_thread(self.update_weights, source)

    # ------------------------------------------------------------------- response
    def _token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id])

    def _logprob_entries(self, ids: list[int], logprobs: list[float], top: list[list[tuple[int, float]]]) -> list[dict[str, Any]]:
        entries = []
        for token_id, logprob, alternatives in zip(ids, logprobs, top, strict=True):
            text = self._token_text(token_id)
            entries.append(
                {
                    "token": text,
                    "logprob": logprob,
                    "bytes": list(text.encode("utf-8")),
                    "top_logprobs": [
                        {"token": (t := self._token_text(i)), "logprob": lp, "bytes": list(t.encode("utf-8"))}
                        for i, lp in alternatives
                    ],
                }
            )
        return entries

    def _response(
        self, body: dict[str, Any], prompt_ids: list[int], result: GenerationResult, parse_tools: bool
    ) -> dict[str, Any]:
        want_ids = bool(body.get("return_token_ids"))
        want_logprobs = bool(body.get("logprobs")) or bool(body.get("top_logprobs"))
        choices = []
        for index, seq in enumerate(result.choices):
            text = self.tokenizer.decode(seq.token_ids, skip_special_tokens=True)
            if seq.stop_text_end is not None:
                text = text[: seq.stop_text_end]
            message: dict[str, Any] = {"role": "assistant", "content": text}
            finish = seq.finish_reason
            if parse_tools:
                content, calls = parse_tool_calls(text)
                if calls:
                    message = {"role": "assistant", "content": content, "tool_calls": calls}
                    if finish == "stop":
                        finish = "tool_calls"
            choice: dict[str, Any] = {
                "index": index,
                "message": message,
                "logprobs": (
                    {"content": self._logprob_entries(seq.token_ids, seq.logprobs, seq.top_logprobs)}
                    if want_logprobs
                    else None
                ),
                "finish_reason": finish,
            }
            if want_ids:
                choice["token_ids"] = list(seq.token_ids)
            choices.append(choice)
        completion = sum(len(seq.token_ids) for seq in result.choices)
        response: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": completion,
                "total_tokens": len(prompt_ids) + completion,
            },
            "policy_version": result.policy_version,
            "timings": {"queued_s": round(result.queued_s, 6), "generation_s": round(result.generation_s, 6)},
        }
        if result.policy_version_final != result.policy_version:
            response["policy_version_final"] = result.policy_version_final
        if want_ids:
            response["prompt_token_ids"] = list(prompt_ids)
        return response
