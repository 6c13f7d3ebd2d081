"""The one batch builder: finished rollouts → a GRPO batch (reconstruct, merge, advantages).

This is the glue every training loop (the ``rl-train`` flow, ``bench/learning.py``) calls
between "the scheduler returned a batch of rollouts" and ``LocalTrainer.step``:

1. :func:`~training.trajectory.build.build_trajectories` — one sample per recorded call,
   ``r_t = γ^(T−t)·r_T``, error trajectories (``infra_error``, ``timeout``) dropped, rollouts
   with a reply cut at the generation cap counted (``cut_reply_rollouts``) and, with
   ``mask_cut_replies``, the cut calls' tokens masked out of the loss (``cut_calls_masked``);
2. optional prefix merging (:mod:`.merge`), only for γ = 1 where it is exact;
3. :func:`~training.trajectory.grpo.assign_group_advantages` — group advantages,
   zero-variance groups reported (and left out unless ``drop_zero_variance`` is off).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from training.trajectory.build import BuildReport, build_trajectories
from training.trajectory.grpo import GroupReport, assign_group_advantages
from training.trajectory.merge import merge_prefix_calls
from training.trajectory.records import Sample


@dataclass
class BatchReport:
    """What one batch holds and what was left out of it, and why."""

    build: BuildReport = field(default_factory=BuildReport)
    groups: GroupReport = field(default_factory=GroupReport)
    merged: bool = False
    n_samples: int = 0

    @property
    def zero_variance_groups(self) -> int:
        return len(self.groups.zero_variance_groups)

    def as_metrics(self) -> dict[str, float]:
        return {
            **self.groups.as_metrics(),
            "batch_samples": float(self.n_samples),
            "rollouts_dropped": float(sum(self.build.dropped.values())),
            "retokenized_calls": float(self.build.n_retokenized_calls),
            "cut_reply_rollouts": float(self.build.n_cut_replies),
            "cut_calls_masked": float(self.build.n_masked_cut_calls),
        }


def prepare_grpo_batch(
    items: Iterable[tuple[Any, Sequence[Any]]],
    *,
    gamma: float = 1.0,
    eps: float = 1e-6,
    norm_by_std: bool = True,
    drop_zero_variance: bool = True,
    merge: bool = False,
    tokenizer: Any | None = None,
    mask_cut_replies: bool = False,
) -> tuple[list[Sample], BatchReport]:
    """``(samples, report)`` for ``(rollout, calls)`` pairs."""
    trajectories, build_report = build_trajectories(items, gamma=gamma, tokenizer=tokenizer, mask_cut=mask_cut_replies)
    merged = merge and gamma == 1.0
    if merged:
        trajectories = [merge_prefix_calls(t) for t in trajectories]
    samples, groups = assign_group_advantages(
        trajectories, gamma=gamma, eps=eps, norm_by_std=norm_by_std, drop_zero_variance=drop_zero_variance
    )
    return samples, BatchReport(build=build_report, groups=groups, merged=merged, n_samples=len(samples))
