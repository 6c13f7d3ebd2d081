"""Prompt-prefix KV reuse for the local engine (what vLLM calls automatic prefix caching).

An agent harness sends, call after call, the same long head — system prompt, tool schemas,
the task — followed by a growing history: Claude Code's first prompt alone is ~21.7k tokens,
minutes of prefill on a CPU. The batcher stores the key/value tensors of each prompt it
prefilled; a later prompt sharing at least ``min_match`` leading tokens with a stored one
(same policy version) reuses them and prefills only the rest.

Entries hold views of tensors the batcher never writes in place at the positions they cover
(a cache layer appends beyond its current length, ``kv_cache.GrowingLayer``, and every other
change assigns new tensors), so storing costs no copy. At most ``max_tokens`` tokens
are kept, least recently used dropped first; an entry a newer prompt extends is replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values of one row [1, heads, len, dim]


@dataclass
class _Entry:
    ids: list[int]
    layers: KV
    policy_version: int


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PrefixCache:
    """A few prompts' KV tensors, looked up by longest common token prefix."""

    def __init__(self, max_tokens: int = 65536, min_match: int = 64) -> None:
        self.max_tokens = max_tokens
        self.min_match = max(1, min_match)
        self._entries: list[_Entry] = []  # least recently used first
        self.hits = 0
        self.reused_tokens = 0

    @property
    def tokens(self) -> int:
        return sum(len(e.ids) for e in self._entries)

    def match(self, ids: list[int], policy_version: int) -> int:
        """Tokens of ``ids`` a :meth:`lookup` would reuse now (0 below ``min_match``), without
        counting a hit or touching the recency order."""
        best = max((min(common_prefix(e.ids, ids), len(ids) - 1) for e in self._entries
                    if e.policy_version == policy_version), default=0)
        return best if best >= self.min_match else 0

    def lookup(self, ids: list[int], policy_version: int) -> tuple[int, KV] | None:
        """``(n, kv)``: the stored KV of ``ids[:n]`` (``n < len(ids)``: one token is left to prefill)."""
        best, best_n = None, 0
        for entry in self._entries:
            if entry.policy_version != policy_version:
                continue
            n = min(common_prefix(entry.ids, ids), len(ids) - 1)
            if n > best_n:
                best, best_n = entry, n
        if best is None or best_n < self.min_match:
            return None
        self._entries.remove(best)
        self._entries.append(best)
        self.hits += 1
        self.reused_tokens += best_n
        return best_n, [(k[:, :, :best_n], v[:, :, :best_n]) for k, v in best.layers]

    def store(self, ids: list[int], layers: KV, policy_version: int) -> None:
        if len(ids) < self.min_match or len(ids) > self.max_tokens:
            return
        self._entries = [e for e in self._entries if e.policy_version == policy_version
                         and common_prefix(e.ids, ids) < len(e.ids)]  # drop what ``ids`` extends (or repeats)
        self._entries.append(_Entry(list(ids), layers, policy_version))
        while self.tokens > self.max_tokens:
            self._entries.pop(0)

    def clear(self) -> None:
        self._entries.clear()
