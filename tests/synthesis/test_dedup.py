"""Greedy embedding dedup: exactly the naive O(n²) rule, blocks or not, with a prior bank."""

from __future__ import annotations

import numpy as np
import pytest

from synthesis.dedup import greedy_dedup, naive_dedup, normalize


def _clustered(n: int, d: int = 32, clusters: int = 40, noise: float = 0.25, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, d))
    return normalize(centers[rng.integers(0, clusters, n)] + noise * rng.normal(size=(n, d)))


@pytest.mark.parametrize("block", [1, 7, 256])
def test_greedy_matches_naive_reference(block: int) -> None:
    emb = _clustered(600)
    order = list(np.random.default_rng(1).permutation(600))
    fast = greedy_dedup(emb, 0.9, order=order, block=block)
    assert fast.kept == naive_dedup(emb, 0.9, order=order)
    assert 40 <= len(fast.kept) < 600  # clusters collapse, yet something is dropped
    assert set(fast.kept) | set(fast.dropped) == set(range(600))


def test_dropped_names_a_kept_neighbour_above_tau() -> None:
    emb = _clustered(200, seed=3)
    res = greedy_dedup(emb, 0.85, block=16)
    kept = set(res.kept)
    for idx, (near, cos) in res.dropped.items():
        assert near in kept
        assert cos >= 0.85
        assert abs(float(emb[idx] @ emb[near]) - cos) < 1e-5


def test_prior_bank_blocks_candidates_and_is_reported_as_negative_index() -> None:
    emb = _clustered(50, seed=5)
    # candidate 0 is an exact copy of bank row 3; the others are distinct
    copy = np.vstack([emb[3:4], emb[20:25]])
    res = greedy_dedup(copy, 0.999, already_kept=emb[:10])
    assert 0 in res.dropped and res.dropped[0][0] == -1 - 3
    assert res.kept == [1, 2, 3, 4, 5]


def test_real_embedder_flags_paraphrase_not_a_different_task() -> None:
    from synthesis.dedup import Embedder

    texts = [
        "Reply to Dana's email about invoice INV-2201 and confirm it will be paid on Friday.",
        "Reply to the email from Dana about invoice INV-2201, confirming it will be paid on Friday.",
        "Cancel my Thursday meeting with Jonas and keep the rest of the calendar unchanged.",
    ]
    vecs = Embedder().encode(texts)
    assert vecs.shape == (3, 384)
    res = greedy_dedup(vecs, 0.9)
    assert res.kept == [0, 2]
    assert res.dropped[1][0] == 0
