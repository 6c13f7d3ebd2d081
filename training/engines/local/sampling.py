"""Sampling parameters from an OpenAI request body, and the per-token sampling step.

:func:`sampling_params_from_body` validates the OpenAI chat parameters the local engine
honours (``temperature``, ``top_p``, ``max_tokens``/``max_completion_tokens``, ``stop``, ``n``,
``seed``, ``logprobs``/``top_logprobs``) plus vLLM's extras (``top_k``, ``stop_token_ids``,
``ignore_eos``); a bad value raises :class:`EngineRequestError` naming the parameter.

:func:`choose_tokens` picks one token per batch row. The logprob it reports is the
log-probability of the chosen token under the distribution it was drawn from: the
temperature-scaled softmax restricted to the top-k / nucleus and renormalised,
``log_softmax(filter(logits / T))[token]``. That is the behaviour policy π_old of the
GRPO ratio, and what the local trainer recomputes for π_θ from the same per-call
parameters (``training.trainers.local.batching.sampling_logprobs``), so the ratio is 1 on
the first epoch. Greedy rows (``T = 0``) report the plain ``log_softmax(logits)[token]``.
The ``top_logprobs`` alternatives are from the temperature-scaled, unfiltered distribution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from training.engines.base import EngineRequestError


@dataclass(frozen=True)
class SamplingParams:
    """How to generate the choices of one request."""

    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    n: int = 1
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise EngineRequestError(f"'{name}' must be a number in [{lo}, {hi}], got {value!r}", param=name)
    return float(value)


def _integer(body: dict[str, Any], name: str, lo: int, hi: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise EngineRequestError(f"'{name}' must be an integer {bound}, got {value!r}", param=name)
    return value


def sampling_params_from_body(body: dict[str, Any]) -> SamplingParams:
    """Validate and collect the sampling parameters of an OpenAI chat request."""
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,) if stop else ()
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(s for s in stop if s)
    else:
        raise EngineRequestError(f"'stop' must be a string or a list of strings, got {stop!r}", param="stop")
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(isinstance(i, int) for i in stop_ids):
        raise EngineRequestError("'stop_token_ids' must be a list of integers", param="stop_token_ids")
    top_k = _integer(body, "top_k", -1)
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise EngineRequestError(f"'seed' must be an integer, got {seed!r}", param="seed")
    top_logprobs = _integer(body, "top_logprobs", 0, 20) or 0
    logprobs = bool(body.get("logprobs")) or top_logprobs > 0
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
    if top_p <= 0.0:
        raise EngineRequestError("'top_p' must be in (0, 1]", param="top_p")
    return SamplingParams(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=top_p,
        top_k=max(top_k or 0, 0),
        n=_integer(body, "n", 1, 128) or 1,
        seed=seed,
        stop=stops,
        stop_token_ids=tuple(stop_ids),
        ignore_eos=bool(body.get("ignore_eos", False)),
        logprobs=logprobs,
        top_logprobs=top_logprobs,
    )


@dataclass
class RowSampler:
    """Sampling state of one sequence: its parameters and its random generator."""

    temperature: float
    top_p: float
    top_k: int
    top_logprobs: int
    generator: torch.Generator | None


@dataclass
class Choice:
    """One sampled token with its logprob and, if asked for, the top alternatives."""

    token: int
    logprob: float
    top: list[tuple[int, float]]


def _filter(logp: torch.Tensor, top_p: float, top_k: int) -> torch.Tensor:
    """Mask (to -inf) tokens outside the top-k / nucleus of a 1-D log-distribution."""
    if top_k and top_k < logp.numel():
        kth = torch.topk(logp, top_k).values[-1]
        logp = logp.masked_fill(logp < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logp, order = torch.sort(logp, descending=True)
        cumulative = torch.cumsum(sorted_logp.exp(), dim=-1)
        drop = cumulative - sorted_logp.exp() >= top_p  # keep the smallest prefix reaching top_p
        logp = logp.clone()
        logp[order[drop]] = float("-inf")
    return logp


def _inverse_cdf(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs`` ([rows, vocab], each row summing to ~1), the first whose
    cumulative probability exceeds that row's ``uniform`` draw in [0, 1): an exact draw from the
    row's distribution (float64 sums; zero-probability tokens are never picked)."""
    cdf = probs.double().cumsum(dim=-1)
    target = (uniform.to(cdf) * cdf[:, -1]).unsqueeze(1)
    return torch.searchsorted(cdf, target, right=True).squeeze(1).clamp(max=probs.shape[-1] - 1)


def choose_tokens(logits: torch.Tensor, rows: list[RowSampler], default_generator: torch.Generator) -> list[Choice]:
    """Pick one token for each row of ``logits`` ([rows, vocab]) as its sampler says.

    Sampled rows are drawn together by inverse CDF, one uniform number per row from the row's
    own generator (a request's ``seed``) or, for the others, from ``default_generator`` in row
    order: the cost of a decode step's sampling no longer grows with one random number per
    vocabulary entry per row (``torch.multinomial``: ~32 ms for 32 rows of a 49k vocabulary on
    one core, against ~4 ms)."""
    logits = logits.float()
    temps = torch.tensor([r.temperature if r.temperature > 0 else 1.0 for r in rows], device=logits.device)
    logp = torch.log_softmax(logits / temps[:, None], dim=-1)
    sampled = [i for i, r in enumerate(rows) if r.temperature > 0]
    drawn: dict[int, tuple[int, float]] = {}
    if sampled:
        # the distribution each sampled row draws from: the tempered one, or its top-k / nucleus renormalised
        pools = {i: torch.log_softmax(_filter(logp[i], rows[i].top_p, rows[i].top_k), dim=-1) for i in sampled
                 if rows[i].top_p < 1.0 or rows[i].top_k}
        dists = torch.stack([pools[i] if i in pools else logp[i] for i in sampled])
        shared = [j for j, i in enumerate(sampled) if rows[i].generator is None]
        uniform = torch.empty(len(sampled), dtype=torch.float64)
        if shared:
            uniform[shared] = torch.rand(len(shared), dtype=torch.float64, generator=default_generator,
                                         device=default_generator.device).cpu()
        for j, i in enumerate(sampled):
            generator = rows[i].generator
            if generator is not None:
                uniform[j] = float(torch.rand(1, dtype=torch.float64, generator=generator, device=generator.device))
        tokens = _inverse_cdf(dists.exp(), uniform).tolist()
        chosen = dists[torch.arange(len(sampled), device=dists.device), torch.tensor(tokens, device=dists.device)]
        drawn = {i: (t, lp) for i, t, lp in zip(sampled, tokens, chosen.tolist(), strict=True)}
    choices: list[Choice] = []
    for i, row in enumerate(rows):
        if i in drawn:
            token, chosen_lp = drawn[i]
        else:  # greedy
            token = int(torch.argmax(logp[i]))
            chosen_lp = float(logp[i, token])
        top: list[tuple[int, float]] = []
        if row.top_logprobs:
            values, ids = torch.topk(logp[i], row.top_logprobs)
            top = list(zip(ids.tolist(), values.tolist(), strict=True))
        choices.append(Choice(token=token, logprob=chosen_lp, top=top))
    return choices
