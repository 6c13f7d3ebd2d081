"""Micro-batches of samples → model inputs, and per-token logprobs of the responses.

A sequence is ``prompt_ids + response_ids``. Response-aligned tensors are [B, R]; the model's
logits at position j predict token j+1, so response token k of a sequence with prompt length
P is scored by the logits at P − 1 + k. Two layouts of the B sequences:

- **packed** (``collate(pack=True)``; what the local trainer uses): the head all sequences
  share, then each sequence's rest, one after the other in ONE row [1, T], with each
  sequence's own positions; attention per sequence (:mod:`.packed_attention`: a token sees
  the head and the earlier tokens of its own sequence). No padding is computed and the head
  runs once, in the same pass;
- **padded**: the rests right-padded to the longest [B, L], the head (if any) run once first
  and its key/value cache broadcast to every row.
"""

from __future__ import annotations

from collections.abc import Sequence
import inspect
from dataclasses import dataclass
from typing import Any

import torch

from training.trainers.local.packed_attention import PackedLayout, packed_forward

#: ``(temperature, top_p, top_k)`` of one sequence's sampling distribution.
Sampling = tuple[float, float, int]
PLAIN: Sampling = (1.0, 1.0, 0)


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] long: each sequence after the shared head
    attention_mask: torch.Tensor  # [B, L] long
    response_index: torch.Tensor  # [B, R] long: position in input_ids of response token k
    response_ids: torch.Tensor  # [B, R] long
    mask: torch.Tensor  # [B, R] float: 1 on trained tokens
    sampling: list[Sampling] | None = None  # per sequence; None: the plain softmax
    #: [1, S] long: the leading tokens every sequence of the batch shares (a GRPO group's
    #: prompt, the system prompt and tool schemas of any agent prompt), run once per forward
    #: pass; None: nothing shared (``input_ids`` are the whole sequences).
    shared_ids: torch.Tensor | None = None
    #: Packed layout: ``input_ids`` [1, T] are the shared head then every sequence's rest (of
    #: these lengths), ``response_index`` positions in that one row. None: the padded layout.
    rest_lengths: tuple[int, ...] | None = None
    head_length: int = 0  # packed layout: tokens of the shared head at the start of the row

    @property
    def packed(self) -> bool:
        return self.rest_lengths is not None

    @property
    def shared(self) -> int:
        if self.packed:
            return self.head_length
        return 0 if self.shared_ids is None else int(self.shared_ids.shape[1])

    @property
    def n_tokens(self) -> int:
        """Tokens one forward pass runs through the model (the shared head once)."""
        return int(self.attention_mask.sum()) + (0 if self.packed else self.shared)


def fits(prompt_len: int, response_len: int, max_prompt: int, max_response: int) -> bool:
    """Whether a sample fits the trainer's window. One that does not is dropped and counted,
    never cut: a left-truncated prompt is a context the engine never sampled from."""
    return prompt_len <= max_prompt and response_len <= max_response


def collate(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    masks: Sequence[Sequence[float]],
    pad_id: int,
    device: torch.device | str = "cpu",
    sampling: Sequence[Sampling] | None = None,
    share_head: bool = True,
    pack: bool = False,
) -> Batch:
    """Tensors for one micro-batch: packed into one row (``pack``) or right-padded.

    With ``share_head`` (and more than one sequence), the tokens all sequences start with —
    up to one before the shortest prompt, whose last position scores the first response
    token — are computed once per forward pass instead of once per sequence (exact: their
    keys and values, gradient included, are what every sequence attends to)."""
    n = len(prompts)
    seqs = [list(p) + list(r) for p, r in zip(prompts, responses, strict=True)]
    shared = shared_head(seqs, min(len(p) for p in prompts) - 1) if (share_head or pack) and n > 1 else 0
    if pack:
        return _packed(seqs, prompts, responses, masks, shared, pad_id, device, sampling)
    seq_len = max(len(q) for q in seqs) - shared
    resp_len = max(1, max(len(r) for r in responses))
    input_ids = torch.full((n, seq_len), pad_id, dtype=torch.long)
    attention = torch.zeros((n, seq_len), dtype=torch.long)
    index = torch.zeros((n, resp_len), dtype=torch.long)
    resp = torch.full((n, resp_len), pad_id, dtype=torch.long)
    mask = torch.zeros((n, resp_len), dtype=torch.float32)
    for b, (p, r, m) in enumerate(zip(prompts, responses, masks, strict=True)):
        rest = seqs[b][shared:]
        input_ids[b, : len(rest)] = torch.tensor(rest, dtype=torch.long)
        attention[b, : len(rest)] = 1
        if r:
            index[b, : len(r)] = torch.arange(len(p) - 1 - shared, len(p) - 1 - shared + len(r))
            resp[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
            mask[b, : len(r)] = torch.tensor(list(m), dtype=torch.float32)
    head = torch.tensor([seqs[0][:shared]], dtype=torch.long).to(device) if shared else None
    return Batch(input_ids.to(device), attention.to(device), index.to(device), resp.to(device), mask.to(device),
                 list(sampling) if sampling is not None else None, head)


def _packed(seqs: list[list[int]], prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]],
            masks: Sequence[Sequence[float]], shared: int, pad_id: int, device: torch.device | str,
            sampling: Sequence[Sampling] | None) -> Batch:
    """The packed layout of :func:`collate`: head, then each sequence's rest, in one row."""
    n = len(seqs)
    rests = [seq[shared:] for seq in seqs]
    flat = seqs[0][:shared] + [tok for rest in rests for tok in rest]
    resp_len = max(1, max(len(r) for r in responses))
    index = torch.zeros((n, resp_len), dtype=torch.long)
    resp = torch.full((n, resp_len), pad_id, dtype=torch.long)
    mask = torch.zeros((n, resp_len), dtype=torch.float32)
    start = shared
    for b, (p, r, m) in enumerate(zip(prompts, responses, masks, strict=True)):
        if r:
            first = start + len(p) - 1 - shared  # the logits that predict response token 0
            index[b, : len(r)] = torch.arange(first, first + len(r))
            resp[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
            mask[b, : len(r)] = torch.tensor(list(m), dtype=torch.float32)
        start += len(rests[b])
    input_ids = torch.tensor([flat], dtype=torch.long)
    return Batch(input_ids.to(device), torch.ones_like(input_ids).to(device), index.to(device), resp.to(device),
                 mask.to(device), list(sampling) if sampling is not None else None, None,
                 rest_lengths=tuple(len(rest) for rest in rests), head_length=shared)


def packable(model: torch.nn.Module) -> bool:
    """Whether ``model`` can run the packed layout: an architecture whose attention layers go
    through transformers' attention interface (:mod:`.packed_attention`)."""
    return getattr(getattr(model, "config", None), "model_type", None) in _PLAIN_HEAD_MODELS


def _packed_positions(batch: Batch) -> torch.Tensor:
    """[1, T]: the head's positions, then each sequence's rest's, counted on from the head."""
    assert batch.rest_lengths is not None
    device, head = batch.input_ids.device, batch.head_length
    return torch.cat([torch.arange(head, device=device)]
                     + [torch.arange(head, head + n, device=device) for n in batch.rest_lengths])[None]


def packed_tokens(seqs: Sequence[Sequence[int]]) -> int:
    """Tokens of ``seqs`` in the packed layout: their shared head once, then each one's rest.
    It may count a few tokens fewer than :func:`collate` packs: its head stops one token
    before the shortest sequence, collate's before the shortest prompt."""
    if len(seqs) < 2:
        return sum(len(q) for q in seqs)
    return sum(len(q) for q in seqs) - (len(seqs) - 1) * shared_head(seqs, min(len(q) for q in seqs) - 1)


def shared_head(seqs: Sequence[Sequence[int]], limit: int) -> int:
    """Length of the longest common prefix of ``seqs``, at most ``limit``."""
    first, n = seqs[0], max(0, limit)
    for seq in seqs[1:]:
        n = min(n, len(seq))
        i = 0
        while i < n and seq[i] == first[i]:
            i += 1
        n = i
        if n == 0:
            break
    return n


#: Architectures whose logits are exactly ``lm_head(last hidden state)`` (no soft-capping or
#: scaling after the head), so the head may be applied to the response positions alone.
_PLAIN_HEAD_MODELS = frozenset({"llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "smollm3"})


def _response_scores(model: torch.nn.Module, batch: Batch, keep: torch.Tensor) -> torch.Tensor:
    """Logits that predict the response tokens at the ``keep`` positions ([B, R] bool), [N, V]
    in row-major order of those positions.

    Agent prompts are long (system prompt, tool schemas, history) and responses short, and
    within a response the tool results are context, not trained: when the architecture allows
    it only the kept positions go through the LM head (and the softmax after it), so neither
    the [B, L, V] logits tensor (GBs for a 49k vocabulary) nor the head's work on masked
    tokens is spent.
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if batch.packed:
        if head is None or not packable(model):
            raise ValueError(f"packed micro-batches: {getattr(model.config, 'model_type', type(model).__name__)!r} "
                             "is not an architecture the packed layout supports (use collate(pack=False))")
        assert batch.rest_lengths is not None
        at = batch.response_index[keep]  # [N] positions in the one packed row
        decoder = model.get_decoder()
        with packed_forward(decoder, PackedLayout(batch.head_length, batch.rest_lengths)) as layout:
            hidden = decoder(input_ids=batch.input_ids, position_ids=_packed_positions(batch), **layout).last_hidden_state
        return head(hidden[0, at]).float()
    if head is not None and getattr(model.config, "model_type", None) in _PLAIN_HEAD_MODELS:
        decoder = model.get_decoder()
        hidden = decoder(**_rows_after_head(decoder, batch)).last_hidden_state
        idx = batch.response_index.unsqueeze(-1).expand(-1, -1, hidden.size(-1))  # [B, R, H]
        return head(torch.gather(hidden, 1, idx)[keep]).float()
    logits = model(**_rows_after_head(model, batch)).logits  # [B, L, V]
    idx = batch.response_index.unsqueeze(-1).expand(-1, -1, logits.size(-1))  # [B, R, V]
    return torch.gather(logits, 1, idx)[keep].float()


def _rows_after_head(module: torch.nn.Module, batch: Batch) -> dict[str, Any]:
    """Forward arguments for the rows of ``batch``: without a shared head, the sequences;
    with one, the head is run once (batch 1) and its key/value cache — broadcast to every
    row, gradient flowing back to the head through the broadcast — precedes the rows."""
    if batch.shared_ids is None:
        return {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    from transformers.cache_utils import DynamicCache  # noqa: PLC0415

    cache_kw = "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"
    cache = DynamicCache(config=module.config)
    module(input_ids=batch.shared_ids, use_cache=True, **{cache_kw: cache})
    rows, shared = batch.input_ids.shape[0], batch.shared
    for layer in cache.layers:
        layer.keys = layer.keys.expand(rows, -1, -1, -1)
        layer.values = layer.values.expand(rows, -1, -1, -1)
    width = batch.input_ids.shape[1]
    mask = torch.cat([batch.attention_mask.new_ones(rows, shared), batch.attention_mask], dim=1)
    positions = torch.arange(shared, shared + width, device=batch.input_ids.device).expand(rows, -1)
    return {"input_ids": batch.input_ids, "attention_mask": mask, "position_ids": positions, "use_cache": True,
            cache_kw: cache}


def sampling_log_distribution(scores: torch.Tensor, rows: torch.Tensor, sampling: Sequence[Sampling],
                               chosen: torch.Tensor) -> torch.Tensor:
    """log π over the vocabulary under each position's sampling distribution, [N, V].

    ``scores`` [N, V] are the logits of N response positions, ``rows`` [N] the sequence each
    belongs to, ``sampling`` the distribution per sequence, ``chosen`` [N] the tokens drawn.
    The same distribution the local engine draws from (``engines/local/sampling.py``): the
    softmax of ``logits / T``, restricted to the top-k, then to the smallest nucleus whose
    (top-k-restricted) mass reaches ``top_p``, renormalised. Greedy sequences (T = 0) are
    scored under the plain softmax. The ``chosen`` token always stays in the set, so a token
    the engine drew is never -inf under a slightly moved policy.
    """
    temps = torch.tensor([t if t > 0 else 1.0 for t, _, _ in sampling], dtype=scores.dtype, device=scores.device)
    logp = torch.log_softmax(scores / temps[rows][:, None], dim=-1)
    drop = torch.zeros_like(logp, dtype=torch.bool)  # [N, V]: outside the position's sampling set
    for b, (temp, top_p, top_k) in enumerate(sampling):
        if temp <= 0 or (top_p >= 1.0 and not 0 < top_k < logp.size(-1)):
            continue
        at = (rows == b).nonzero(as_tuple=True)[0]
        if at.numel() == 0:
            continue
        row = logp[at].detach()  # [n_b, V]; the set is chosen without gradient, as the engine does
        cut = torch.zeros_like(row, dtype=torch.bool)
        if 0 < top_k < row.size(-1):
            kth = torch.topk(row, top_k, dim=-1).values[:, -1:]
            cut |= row < kth
            row = row.masked_fill(cut, float("-inf"))
        if top_p < 1.0:
            sorted_logp, order = torch.sort(row, dim=-1, descending=True)
            probs = sorted_logp.exp()
            beyond = (torch.cumsum(probs, dim=-1) - probs) >= top_p
            cut |= torch.zeros_like(cut).scatter_(1, order, beyond)
        drop[at] = cut
    if not drop.any():
        return logp
    drop.scatter_(1, chosen.unsqueeze(-1), False)
    return torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)


def response_logprobs(model: torch.nn.Module, batch: Batch, *, with_entropy: bool = False) -> Any:
    """log π(response token k) for every sequence, [B, R] (0 where mask = 0: those positions —
    padding, tool results — are not scored), under each sequence's sampling distribution
    (``batch.sampling``; the plain softmax if None). With ``with_entropy``:
    ``(logprobs, entropy)``, the entropy of that distribution per token (0 where mask = 0)."""
    keep = batch.mask > 0  # [B, R]
    scores = _response_scores(model, batch, keep)  # [N, V] logits that predict each trained token
    chosen_ids = batch.response_ids[keep]  # [N]
    if batch.sampling is not None and any(s != PLAIN for s in batch.sampling):
        rows = keep.nonzero(as_tuple=True)[0]
        logp = sampling_log_distribution(scores, rows, batch.sampling, chosen_ids)
    else:
        logp = torch.log_softmax(scores, dim=-1)
    picked = torch.gather(logp, 1, chosen_ids.unsqueeze(-1)).squeeze(-1)  # [N]
    chosen = torch.zeros(keep.shape, dtype=picked.dtype, device=picked.device).masked_scatter(keep, picked)
    if not with_entropy:
        return chosen
    p = logp.exp()
    ent = -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)  # [N]
    return chosen, torch.zeros(keep.shape, dtype=ent.dtype, device=ent.device).masked_scatter(keep, ent)
