"""Continuous batching for the local engine: one worker thread, one shared KV cache.

Requests are queued from any thread (:meth:`Batcher.submit` returns a
``concurrent.futures.Future``; asyncio callers wrap it with ``asyncio.wrap_future`` so the
event loop never blocks on the model). The worker loops:

1. **admit** queued requests while the batch has room: the prompts waiting together are
   prefilled in one left-padded forward pass (up to ``prefill_token_budget`` padded tokens;
   ``logits_to_keep=1``), each prompt's cache row is repeated ``n`` times for ``n`` choices,
   and the new rows are merged into the running batch by left-padding whichever side is
   shorter (attention-mask zeros over the padding, explicit position ids per row, so
   padding never shifts a row's positions);
2. **commit** each row's pending token (sampled from the previous forward pass): append it
   with its logprob, finish the row on end-of-turn / stop token / stop string / max tokens /
   full context, resolve a request's future once all its choices are done, drop finished
   rows from the cache and trim padding columns that no row needs any more;
3. **decode** one token for every remaining row in a single forward pass.

So sequences join and leave the batch independently and concurrent requests share every
decode step. A prompt prefilled alone reuses the KV of a stored prompt it shares a long
head with (:mod:`training.engines.local.prefix_cache`) and prefills only the rest. Weights are only touched under ``weights_lock``, which each forward pass
holds; :meth:`LocalEngine.update_weights` takes it between steps.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from training.cpu import CoreClaim
from training.engines.base import EngineError
from training.engines.local.kv_cache import GrowingLayer, growing_cache
from training.engines.local.prefix_cache import PrefixCache, common_prefix
from training.engines.local.sampling import (
    Choice,
    RowSampler,
    SamplingParams,
    choose_tokens,
)

log = logging.getLogger(__name__)

#: A prefill of at least this many new tokens runs on every core (see ``Batcher._set_threads``).
LONG_PREFILL_TOKENS = 512


@dataclass
class SequenceResult:
    """One finished choice."""

    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[tuple[int, float]]]
    finish_reason: str
    stop_text_end: int | None  # char offset where a stop string began in the decoded text


@dataclass
class GenerationResult:
    """What the worker hands back for one request."""

    choices: list[SequenceResult]
    policy_version: int
    policy_version_final: int
    queued_s: float
    generation_s: float


@dataclass
class GenerationRequest:
    prompt_ids: list[int]
    params: SamplingParams
    max_new_tokens: int
    future: concurrent.futures.Future[GenerationResult] = field(default_factory=concurrent.futures.Future)
    submitted_at: float = field(default_factory=time.monotonic)
    admitted_at: float = 0.0
    policy_version: int = 0
    results: dict[int, SequenceResult] = field(default_factory=dict)


@dataclass
class _Row:
    request: GenerationRequest
    index: int
    sampler: RowSampler
    pending: Choice | None = None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top: list[list[tuple[int, float]]] = field(default_factory=list)


@dataclass
class BatcherStats:
    """Counters for tests and benches."""

    prefill_passes: int = 0
    decode_steps: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    max_rows: int = 0
    requests_submitted: int = 0
    requests_done: int = 0
    prefix_reused_tokens: int = 0  # prompt tokens whose KV came from the prefix cache
    prefilled_tokens: int = 0  # prompt tokens run through the model (distinct prompts, cache misses)
    threads: int = 0  # intra-op threads the worker's forward passes run with
    prefill_seconds: float = 0.0  # wall time in prefill forward passes
    decode_seconds: float = 0.0  # wall time in decode steps (forward pass + sampling)


def _layers(cache: DynamicCache) -> list[DynamicLayer]:
    layers = list(cache.layers)
    for layer in layers:
        if type(layer) not in (DynamicLayer, GrowingLayer):
            raise EngineError(
                f"local engine: cache layer type {type(layer).__name__} cannot be batched "
                "(only full-attention DynamicLayer caches are supported)",
                kind="unsupported_model",
            )
    return layers


def _left_pad(cache: DynamicCache, mask: torch.Tensor, width: int) -> torch.Tensor:
    """Prepend ``width`` empty columns to every layer of ``cache``; return the widened mask."""
    if width <= 0:
        return mask
    for layer in _layers(cache):
        pad = layer.keys.new_zeros(*layer.keys.shape[:2], width, layer.keys.shape[-1])
        layer.keys = torch.cat([pad, layer.keys], dim=-2)
        pad = layer.values.new_zeros(*layer.values.shape[:2], width, layer.values.shape[-1])
        layer.values = torch.cat([pad, layer.values], dim=-2)
    return torch.cat([mask.new_zeros(mask.shape[0], width), mask], dim=1)


class Batcher:
    """Owns the worker thread that runs every forward pass of one model."""

    def __init__(
        self,
        model: Any,
        *,
        eos_token_ids: set[int],
        decode: Any,
        max_batch_size: int = 8,
        seed: int | None = None,
        prefill_token_budget: int = 4096,
        prefix_cache: PrefixCache | None = None,
        name: str = "local-engine",
        threads: int | None = None,
    ) -> None:
        self.model = model
        self.device = next(model.parameters()).device
        self.eos_token_ids = eos_token_ids
        self.decode = decode  # token ids -> text, for stop strings
        self.max_batch_size = max(1, max_batch_size)
        self.prefill_token_budget = prefill_token_budget  # padded tokens per grouped prefill
        self.prefix_cache = prefix_cache
        #: Intra-op threads of this worker's forward passes (None: torch's process default).
        #: Thread-local in torch, so the trainer in the same process keeps its own.
        self.threads = threads
        self._cores = CoreClaim()  # the cores this engine uses while it serves (training.cpu)
        # transformers 5.x renamed ``past_key_values`` to ``cache``; accept either.
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self.weights_lock = threading.Lock()
        self.policy_version = 0
        self.stats = BatcherStats()
        self._generator = torch.Generator(device=self.device)
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)
        self._queue: deque[GenerationRequest] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._rows: list[_Row] = []
        self._cache: DynamicCache | None = None
        self._mask: torch.Tensor | None = None  # [rows, cache_len] 1 = real token
        self._positions: torch.Tensor | None = None  # [rows] position id of each pending token
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------- public (any thread)
    def submit(self, request: GenerationRequest) -> concurrent.futures.Future[GenerationResult]:
        with self._wake:
            if self._closed:
                raise EngineError("local engine is closed", status_code=503)
            self._queue.append(request)
            self.stats.requests_submitted += 1
            self._wake.notify()
        return request.future

    @property
    def queued(self) -> int:
        """Requests waiting for admission."""
        with self._wake:
            return len(self._queue)

    def close(self, timeout: float = 30.0) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout)

    # ------------------------------------------------------------------------ worker
    def _run(self) -> None:
        if self.threads is not None and self.device.type == "cpu":
            torch.set_num_threads(self.threads)
        self.stats.threads = torch.get_num_threads()
        while True:
            with self._wake:
                while not self._queue and not self._rows and not self._closed:
                    self._cores.release()  # idle: a trainer beside this engine may use them
                    self._wake.wait()
                if self._closed:
                    break
            try:
                with torch.inference_mode():
                    self._admit()
                    self._commit()
                    if self._rows:
                        self._decode()
            except Exception as exc:  # a failed forward pass fails the requests in it, not the engine
                log.exception("local engine step failed")
                self._fail_all(EngineError(f"local engine failed: {exc}", status_code=500))
        self._cores.release()
        self._fail_all(EngineError("local engine closed", status_code=503), include_queue=True)

    def _fail_all(self, error: Exception, include_queue: bool = False) -> None:
        requests = {id(row.request): row.request for row in self._rows}
        if include_queue:
            with self._wake:
                requests.update({id(r): r for r in self._queue})
                self._queue.clear()
        for request in requests.values():
            if not request.future.done():
                request.future.set_exception(error)
        self._rows, self._cache, self._mask, self._positions = [], None, None, None

    def _next_group(self) -> list[GenerationRequest]:
        """Queued requests to prefill together: they fit the batch and the padded-token budget."""
        group: list[GenerationRequest] = []
        rows, longest = len(self._rows), 0
        with self._wake:
            while self._queue:
                request = self._queue[0]
                if request.future.cancelled():
                    self._queue.popleft()
                    continue
                n, length = request.params.n, len(request.prompt_ids)
                if rows and rows + n > self.max_batch_size:
                    break
                if group and (len(group) + 1) * max(longest, length) > self.prefill_token_budget:
                    break
                group.append(self._queue.popleft())
                rows, longest = rows + n, max(longest, length)
        return group

    def _admit(self) -> None:
        while group := self._next_group():
            for part in self._prefill_parts(group):
                try:
                    self._prefill(part)
                except Exception as exc:  # these prompts failed (e.g. out of memory); the batch carries on
                    log.exception("local engine prefill of %d prompt(s) failed", len(part))
                    for request in part:
                        if not request.future.done():
                            request.future.set_exception(EngineError(f"local engine prefill failed: {exc}", status_code=500))

    def _prefill_parts(self, group: list[GenerationRequest]) -> list[list[GenerationRequest]]:
        """How to prefill ``group``, in order. Without a prefix cache: one padded pass. With one,
        a prompt that shares at least ``min_match`` leading tokens with a stored prompt or with
        an earlier prompt of the group (a rollout's next call extends its previous prompt;
        different tasks' first prompts share the harness's system prompt and tool schemas) is
        prefilled alone, after the others, from the longest stored head; the rest (cold
        prompts) go first, together in one padded pass. Identical prompts share a part."""
        if self.prefix_cache is None:
            return [group]
        by_prompt: dict[tuple[int, ...], list[GenerationRequest]] = {}
        for request in group:
            by_prompt.setdefault(tuple(request.prompt_ids), []).append(request)
        cold: list[GenerationRequest] = []
        warm: list[list[GenerationRequest]] = []
        seen: list[list[int]] = []
        version = self.policy_version
        for prompt, requests in by_prompt.items():
            ids = list(prompt)
            shared = max((common_prefix(ids, earlier) for earlier in seen), default=0)
            if self.prefix_cache.match(ids, version) or min(shared, len(ids) - 1) >= self.prefix_cache.min_match:
                warm.append(requests)
            else:
                cold.extend(requests)
            seen.append(ids)
        return ([cold] if cold else []) + warm

    def _prefill(self, group: list[GenerationRequest]) -> None:
        """One forward pass over the group's distinct prompts, left-padded; join the running batch.

        Identical prompts (a GRPO group's or an evaluation's first calls: same task, same
        harness) are prefilled once and their rows repeated, like ``n`` choices. Every prompt
        prefilled goes to the prefix cache, so a rollout's next call prefills only what is new.
        """
        for request in group:
            request.admitted_at = time.monotonic()
            request.policy_version = self.policy_version
        distinct: dict[tuple[int, ...], int] = {}
        for request in group:
            distinct.setdefault(tuple(request.prompt_ids), len(distinct))
        prompts = list(distinct)
        lengths = [len(p) for p in prompts]
        width = max(lengths)
        ids = torch.zeros(len(prompts), width, dtype=torch.long, device=self.device)
        mask = torch.zeros(len(prompts), width, dtype=torch.long, device=self.device)
        for i, prompt in enumerate(prompts):
            ids[i, width - lengths[i] :] = torch.tensor(prompt, device=self.device)
            mask[i, width - lengths[i] :] = 1
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        cache = growing_cache(self.model.config)
        padded = any(length != width for length in lengths)
        alone = len(prompts) == 1 and self.prefix_cache is not None
        began = time.perf_counter()
        with self.weights_lock:
            start = self._reuse_prefix(group[0], cache) if alone else 0
            self._set_threads(len(prompts) * (width - start))
            out = self.model(
                input_ids=ids[:, start:],
                attention_mask=mask if padded else None,  # unpadded: the causal fast path
                position_ids=positions[:, start:],
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_kw: cache},
            )
            if self.prefix_cache is not None:
                layers = _layers(cache)
                for i, prompt in enumerate(prompts):  # row i without its left padding
                    pad = width - lengths[i]
                    self.prefix_cache.store(list(prompt), [(layer.keys[i : i + 1, :, pad:], layer.values[i : i + 1, :, pad:])
                                                           for layer in layers], self.policy_version)
        self.stats.prefill_passes += 1
        self.stats.prefill_seconds += time.perf_counter() - began
        self.stats.prompt_tokens += sum(len(r.prompt_ids) for r in group)
        self.stats.prefilled_tokens += sum(lengths) - start
        self.stats.prefix_reused_tokens += start
        # one row per choice: request r with n choices occupies n consecutive rows, all
        # copies of its prompt's prefilled row
        index = [distinct[tuple(request.prompt_ids)] for request in group for _ in range(request.params.n)]
        rows = [self._new_row(request, j) for request in group for j in range(request.params.n)]
        select = torch.tensor(index, device=self.device)
        if index != list(range(len(prompts))):
            cache.batch_select_indices(select)
        logits = out.logits[:, -1, :][select]
        for row, choice in zip(rows, choose_tokens(logits, [r.sampler for r in rows], self._generator), strict=True):
            row.pending = choice
        next_positions = torch.tensor([lengths[i] for i in index], dtype=torch.long, device=self.device)
        self._merge(rows, cache, mask[select], next_positions)

    def _set_threads(self, new_tokens: int) -> None:
        """Every core no other worker of the process holds for a long prefill (large matrix
        products, few synchronisation points), ``threads`` for decode steps and short prefills
        (many small ops, each a barrier that stalls when a harness process holds one of the
        cores). Held in the process's :class:`CoreClaim` ledger while the engine serves."""
        if self.threads is None or self.device.type != "cpu":
            return
        wanted = max(self.threads, self._cores.left()) if new_tokens >= LONG_PREFILL_TOKENS else self.threads
        self._cores.hold(wanted)
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)

    def _reuse_prefix(self, request: GenerationRequest, cache: DynamicCache) -> int:
        """Fill ``cache`` with the stored KV of the request's longest known prompt head; its length."""
        assert self.prefix_cache is not None
        hit = self.prefix_cache.lookup(request.prompt_ids, request.policy_version)
        if hit is None:
            return 0
        start, layers = hit
        for index, (keys, values) in enumerate(layers):
            cache.update(keys, values, index)
        return start

    def _new_row(self, request: GenerationRequest, index: int) -> _Row:
        params = request.params
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=self.device)
            generator.manual_seed(params.seed + index)
        sampler = RowSampler(params.temperature, params.top_p, params.top_k, params.top_logprobs, generator)
        return _Row(request=request, index=index, sampler=sampler)

    def _merge(self, rows: list[_Row], cache: DynamicCache, mask: torch.Tensor, positions: torch.Tensor) -> None:
        if self._cache is None or self._mask is None or self._positions is None:
            _layers(cache)
            self._rows, self._cache, self._mask, self._positions = rows, cache, mask, positions
        else:
            width = self._mask.shape[1] - mask.shape[1]
            mask = _left_pad(cache, mask, width)
            self._mask = _left_pad(self._cache, self._mask, -width)
            for mine, theirs in zip(_layers(self._cache), _layers(cache), strict=True):
                mine.keys = torch.cat([mine.keys, theirs.keys], dim=0)
                mine.values = torch.cat([mine.values, theirs.values], dim=0)
            self._mask = torch.cat([self._mask, mask], dim=0)
            self._positions = torch.cat([self._positions, positions], dim=0)
            self._rows = self._rows + rows
        self.stats.max_rows = max(self.stats.max_rows, len(self._rows))

    def _finish_reason(self, row: _Row, choice: Choice) -> tuple[str | None, int | None]:
        params = row.request.params
        if not params.ignore_eos and choice.token in self.eos_token_ids:
            return "stop", None
        if choice.token in params.stop_token_ids:
            return "stop", None
        if params.stop:
            text = self.decode(row.token_ids)
            tail_from = max(0, len(text) - max(len(s) for s in params.stop) - 64)
            hits = [pos for s in params.stop if (pos := text.find(s, tail_from)) >= 0]
            if hits:
                return "stop", min(hits)
        if len(row.token_ids) >= row.request.max_new_tokens:
            return "length", None
        return None, None

    def _commit(self) -> None:
        keep: list[int] = []
        for i, row in enumerate(self._rows):
            request, choice = row.request, row.pending
            assert choice is not None
            if request.future.cancelled():
                continue
            row.token_ids.append(choice.token)
            row.logprobs.append(choice.logprob)
            row.top.append(choice.top)
            self.stats.generated_tokens += 1
            reason, stop_at = self._finish_reason(row, choice)
            if reason is None:
                keep.append(i)
                continue
            request.results[row.index] = SequenceResult(row.token_ids, row.logprobs, row.top, reason, stop_at)
            if len(request.results) == request.params.n and not request.future.done():
                now = time.monotonic()
                result = GenerationResult(
                    choices=[request.results[j] for j in range(request.params.n)],
                    policy_version=request.policy_version,
                    policy_version_final=self.policy_version,
                    queued_s=request.admitted_at - request.submitted_at,
                    generation_s=now - request.admitted_at,
                )
                self.stats.requests_done += 1
                try:
                    request.future.set_result(result)
                except concurrent.futures.InvalidStateError:
                    pass  # cancelled meanwhile
        if len(keep) == len(self._rows):
            return
        if not keep:
            self._rows, self._cache, self._mask, self._positions = [], None, None, None
            return
        assert self._cache is not None and self._mask is not None and self._positions is not None
        index = torch.tensor(keep, device=self.device)
        self._cache.batch_select_indices(index)
        self._rows = [self._rows[i] for i in keep]
        self._mask = self._mask[index]
        self._positions = self._positions[index]
        used = self._mask.any(dim=0).nonzero()
        first = int(used[0]) if used.numel() else 0
        if first > 0:  # drop padding columns no remaining row needs
            for layer in _layers(self._cache):
                layer.keys = layer.keys[..., first:, :]
                layer.values = layer.values[..., first:, :]
            self._mask = self._mask[:, first:]

    def _decode(self) -> None:
        assert self._cache is not None and self._mask is not None and self._positions is not None
        began = time.perf_counter()
        self._set_threads(len(self._rows))
        tokens = torch.tensor([[row.pending.token] for row in self._rows if row.pending], device=self.device)
        self._mask = torch.cat([self._mask, self._mask.new_ones(len(self._rows), 1)], dim=1)
        with self.weights_lock:
            out = self.model(
                input_ids=tokens,
                attention_mask=self._mask,
                position_ids=self._positions[:, None],
                use_cache=True,
                **{self._cache_kw: self._cache},
            )
        self.stats.decode_steps += 1
        self._positions = self._positions + 1
        choices = choose_tokens(out.logits[:, -1, :], [row.sampler for row in self._rows], self._generator)
        for row, choice in zip(self._rows, choices, strict=True):
            row.pending = choice
        self.stats.decode_seconds += time.perf_counter() - began
