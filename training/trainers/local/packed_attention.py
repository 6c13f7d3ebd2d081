"""Attention over a packed micro-batch: a shared head, then sequences one after the other.

The packed layout (:func:`training.trainers.local.batching.collate` with ``pack=True``) runs
a GRPO group's prompt head once and each sequence's rest after it, in one row, without
padding. Each sequence must see the head and its own earlier tokens only. A block mask over
the whole row would do that, but the attention kernels then compute every (query, key) pair
of the row — 3x the pairs that count for a group of four on this job — and hold a T x T
mask. Here the head attends causally to itself, and each sequence's queries attend to the
head's keys followed by their own (causal): the pairs each padded row would have computed,
no others, and no mask wider than one sequence.

It is registered with transformers' attention interface under :data:`PACKED_ATTENTION` and
selected for the duration of one forward pass (:func:`packed_forward`); the layout travels
to every attention layer as a forward keyword argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

PACKED_ATTENTION = "openforge_packed"


@dataclass(frozen=True)
class PackedLayout:
    """Where the head and each sequence's rest lie in the packed row."""

    head: int  # tokens of the shared head at the start of the row
    rest_lengths: tuple[int, ...]  # tokens of each sequence after the head, in order


@dataclass
class _Calls:
    n: int = 0


def packed_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                     packed_layout: PackedLayout | None = None, packed_calls: _Calls | None = None,
                     **_: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: ``query`` [1, Hq, T, d], ``key`` and
    ``value`` [1, Hkv, T, d] → ``([1, T, Hq, d], None)``."""
    if packed_layout is None:
        raise ValueError("packed attention called without a packed_layout: use packed_forward")
    if query.shape[0] != 1:
        raise ValueError(f"packed attention expects one packed row, got a batch of {query.shape[0]}")
    gqa = query.shape[1] != key.shape[1]
    head = packed_layout.head
    parts = []
    if head:
        parts.append(F.scaled_dot_product_attention(query[:, :, :head], key[:, :, :head], value[:, :, :head],
                                                    dropout_p=dropout, is_causal=True, scale=scaling, enable_gqa=gqa))
    start = head
    for n in packed_layout.rest_lengths:
        if n == 0:
            continue
        q = query[:, :, start: start + n]
        if head:
            k = torch.cat([key[:, :, :head], key[:, :, start: start + n]], dim=2)
            v = torch.cat([value[:, :, :head], value[:, :, start: start + n]], dim=2)
            sees = torch.ones(n, head + n, dtype=torch.bool, device=query.device).tril(diagonal=head)
            parts.append(F.scaled_dot_product_attention(q, k, v, attn_mask=sees, dropout_p=dropout, scale=scaling,
                                                        enable_gqa=gqa))
        else:
            parts.append(F.scaled_dot_product_attention(q, key[:, :, start: start + n], value[:, :, start: start + n],
                                                        dropout_p=dropout, is_causal=True, scale=scaling,
                                                        enable_gqa=gqa))
        start += n
    if packed_calls is not None:
        packed_calls.n += 1
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_ATTENTION, packed_attention)


@contextmanager
def packed_forward(model: torch.nn.Module, layout: PackedLayout) -> Iterator[dict[str, Any]]:
    """Select packed attention on ``model`` for one forward pass; yields the keyword arguments
    that pass the layout to its attention layers. Raises if the pass did not go through
    packed attention in every layer (a model whose layers do not use transformers' attention
    interface would otherwise mix the sequences silently)."""
    _register()
    config = model.config
    before = config._attn_implementation
    calls = _Calls()
    config._attn_implementation = PACKED_ATTENTION
    try:
        yield {"packed_layout": layout, "packed_calls": calls}
    finally:
        config._attn_implementation = before
    layers = getattr(config, "num_hidden_layers", None)
    if layers is not None and calls.n != layers:
        raise RuntimeError(f"packed attention ran in {calls.n} of {layers} layers of {type(model).__name__}: "
                           "this architecture cannot train packed micro-batches")
