"""One call from finished rollouts to a GRPO batch: reconstruct, optionally merge, advantages.

This is the glue a training loop (``rl-train`` flow, ``bench/learning.py``) calls between
"the scheduler returned a batch of rollouts" and ``LocalTrainer.step``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from training.trajectory.build import build_trajectories
from training.trajectory.grpo import assign_group_advantages
from training.trajectory.merge import merge_prefix_calls
from training.trajectory.records import Sample


def prepare_grpo_batch(
    items: Iterable[tuple[Any, Sequence[Any]]],
    *,
    gamma: float = 1.0,
    eps: float = 1e-6,
    norm_by_std: bool = True,
    drop_zero_variance: bool = True,
    merge: bool = False,
    tokenizer: Any | None = None,
) -> tuple[list[Sample], dict[str, Any]]:
    """``(samples, report)`` for ``(rollout, calls)`` pairs; the report merges the
    reconstruction and group statistics (dropped outcomes, zero-variance groups ...)."""
    trajectories, build_report = build_trajectories(items, gamma=gamma, tokenizer=tokenizer)
    if merge:
        trajectories = [merge_prefix_calls(t) for t in trajectories]
    samples, groups = assign_group_advantages(
        trajectories, gamma=gamma, eps=eps, norm_by_std=norm_by_std, drop_zero_variance=drop_zero_variance
    )
    report: dict[str, Any] = {**build_report.as_dict(), **groups.as_metrics(), "zero_variance_group_ids": groups.zero_variance_groups}
    return samples, report
