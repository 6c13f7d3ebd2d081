"""A KV cache that appends in place: the local engine's decode step writes one token per row
into spare room instead of copying the whole cache.

Transformers' :class:`~transformers.cache_utils.DynamicLayer` grows by ``torch.cat`` on every
update, so decoding token ``t`` copies all ``t - 1`` cached keys and values of every layer:
per-token cost linear in the context, a quarter of a decode step's CPU time on the default
model at ~300 tokens (profiled). :class:`GrowingLayer` keeps ``keys``/``values`` as views of a
larger buffer and writes new tokens into it; the buffer is reallocated (with headroom) only
when it is full or when the batcher has replaced the tensors (rows joined, left, or padding
was trimmed — those paths assign new tensors and never write into a view in place).

Everything else the batcher does to a layer — ``batch_select_indices``, left padding,
trimming, merging rows, storing a prompt's KV in the prefix cache — keeps working on the
views unchanged: a stored view covers only positions already written, and later appends land
beyond it.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

#: Spare positions added on a reallocation: at least this many, or a quarter of the length.
MIN_HEADROOM = 128


class GrowingLayer(DynamicLayer):
    """A full-attention cache layer whose appends are in place (amortised)."""

    def __init__(self) -> None:
        super().__init__()
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def _backs(self, rows: int, needed: int) -> bool:
        """Do our buffers hold ``self.keys``/``self.values`` at offset 0 with room for ``needed``?"""
        k, v = self._key_buffer, self._value_buffer
        if k is None or v is None or needed > k.shape[-2] or self.keys is None or self.values is None:
            return False
        return (self.keys.numel() > 0 and self.keys.data_ptr() == k.data_ptr() and self.values.data_ptr() == v.data_ptr()
                and self.keys.shape[0] == rows == k.shape[0] and self.keys.stride() == k.stride()
                and self.values.stride() == v.stride())

    def _regrow(self, length: int, needed: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        capacity = needed + max(MIN_HEADROOM, needed // 4)
        new_keys = keys.new_empty(*keys.shape[:2], capacity, keys.shape[-1])
        new_values = values.new_empty(*values.shape[:2], capacity, values.shape[-1])
        if length:
            new_keys[..., :length, :].copy_(self.keys)
            new_values[..., :length, :].copy_(self.values)
        self._key_buffer, self._value_buffer = new_keys, new_values

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
               ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self.keys.shape[-2] if self.keys is not None and self.keys.numel() else 0
        if length and self.keys.shape[0] != key_states.shape[0]:
            raise ValueError(f"cache has {self.keys.shape[0]} rows, update has {key_states.shape[0]}")
        needed = length + key_states.shape[-2]
        if not self._backs(key_states.shape[0], needed):
            self._regrow(length, needed, key_states, value_states)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[..., length:needed, :].copy_(key_states)
        self._value_buffer[..., length:needed, :].copy_(value_states)
        self.keys = self._key_buffer[..., :needed, :]
        self.values = self._value_buffer[..., :needed, :]
        return self.keys, self.values

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        super().reset()


def growing_cache(config: Any) -> DynamicCache:
    """A :class:`DynamicCache` for ``config`` whose layers are all :class:`GrowingLayer`.

    Only full-attention models: a config with sliding-window or other layer kinds is refused
    by the batcher before this is reached (it checks every layer's type)."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache
