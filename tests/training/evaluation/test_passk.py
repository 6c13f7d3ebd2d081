"""pass@k / pass^k estimators and per-harness scoring."""

from __future__ import annotations

import itertools
import random

import pytest

from training.evaluation.passk import Outcome, pass_at_k, pass_hat_k, score


def _brute(n: int, c: int, k: int, all_of: bool) -> float:
    results = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    hit = sum((all if all_of else any)(results[i] for i in s) for s in subsets)
    return hit / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 0, 1), (5, 2, 1), (5, 2, 3), (6, 6, 4), (7, 3, 7), (4, 1, 2)])
def test_estimators_equal_exhaustive_subsets(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(_brute(n, c, k, all_of=False))
    assert pass_hat_k(n, c, k) == pytest.approx(_brute(n, c, k, all_of=True))


def test_k_larger_than_n_is_an_error() -> None:
    with pytest.raises(ValueError, match="k=4 exceeds the n=3"):
        pass_at_k(3, 1, 4)


def test_score_per_harness_ignores_infra_failures() -> None:
    outcomes = [
        Outcome("t1", "react", 1.0), Outcome("t1", "react", 0.0), Outcome("t1", "react", None),
        Outcome("t2", "react", 0.0), Outcome("t2", "react", 0.0),
        Outcome("t1", "codex", 1.0), Outcome("t1", "codex", 1.0),
    ]
    table = {s.harness: s for s in score(outcomes, ks=(1, 2))}
    react = table["react"]
    assert react.samples == 4 and react.tasks == 2
    assert react.pass_at[1] == pytest.approx((0.5 + 0.0) / 2)
    assert react.pass_at[2] == pytest.approx((1.0 + 0.0) / 2)
    assert react.pass_hat[2] == pytest.approx(0.0)
    assert table["codex"].pass_hat[2] == pytest.approx(1.0)


def test_partial_rewards_count_as_failure_below_threshold() -> None:
    rng = random.Random(0)
    outcomes = [Outcome("t", "h", rng.choice([0.5, 0.99])) for _ in range(6)]
    assert score(outcomes)[0].pass_at[1] == 0.0
    assert score(outcomes, threshold=0.5)[0].pass_at[1] == 1.0
