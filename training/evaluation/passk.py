"""pass@k and pass^k from n rollouts per task (the paper's evaluation tables).

- pass@k: the chance that at least one of k samples succeeds, unbiased estimator
  ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021), averaged over tasks.
- pass^k: the chance that all k samples succeed, ``C(c, k) / C(n, k)`` (τ-bench), averaged.
A rollout succeeds when its reward ≥ ``threshold`` (1.0 by default: the verifier's full score).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from math import comb


@dataclass(frozen=True)
class Outcome:
    task_id: str
    harness: str
    reward: float | None  # None: the rollout failed for infra reasons (not counted)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with ``c`` successes out of ``n`` samples."""
    if k > n:
        raise ValueError(f"k={k} exceeds the n={n} samples of the task")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k for one task: all of k samples (drawn without replacement) succeed."""
    if k > n:
        raise ValueError(f"k={k} exceeds the n={n} samples of the task")
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True)
class HarnessScores:
    harness: str
    tasks: int
    samples: int
    mean_reward: float
    pass_at: dict[int, float]
    pass_hat: dict[int, float]


def score(outcomes: Iterable[Outcome], ks: Iterable[int] = (1,), threshold: float = 1.0) -> list[HarnessScores]:
    """Per-harness pass@k and pass^k averaged over tasks (tasks with fewer than k usable
    samples are left out of that k)."""
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        if o.reward is not None:
            by[o.harness][o.task_id].append(o.reward)
    ks = sorted(set(ks))
    table: list[HarnessScores] = []
    for harness in sorted(by):
        tasks = by[harness]
        rewards = [r for rs in tasks.values() for r in rs]
        at: dict[int, float] = {}
        hat: dict[int, float] = {}
        for k in ks:
            usable = [(len(rs), sum(r >= threshold for r in rs)) for rs in tasks.values() if len(rs) >= k]
            if usable:
                at[k] = sum(pass_at_k(n, c, k) for n, c in usable) / len(usable)
                hat[k] = sum(pass_hat_k(n, c, k) for n, c in usable) / len(usable)
        table.append(
            HarnessScores(harness, len(tasks), len(rewards), sum(rewards) / len(rewards) if rewards else 0.0, at, hat)
        )
    return table
