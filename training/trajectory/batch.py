"""The one batch builder: finished rollouts → a GRPO batch (reconstruct, merge, advantages).

This is the glue every training loop (the ``rl-train`` flow, ``bench/learning.py``) calls
between "the scheduler returned a batch of rollouts" and ``LocalTrainer.step``:

1. :func:`~training.trajectory.build.build_trajectories` — one sample per recorded call,
   ``r_t = γ^(T−t)·r_T``, error trajectories (``infra_error``, ``timeout``) dropped, rollouts
   with a reply cut at the generation cap counted (``cut_reply_rollouts``) and, with
   ``mask_cut_replies``, the cut calls' tokens masked out of the loss (``cut_calls_masked``):
   in every rollout (``True``) or only in those above their group's mean reward
   (``"reinforced"``: a cut reply is never reinforced, and still pushed down where it lost);
2. optional prefix merging (:mod:`.merge`), only for γ = 1 where it is exact;
3. :func:`~training.trajectory.grpo.assign_group_advantages` — group advantages,
   zero-variance groups reported (and left out unless ``drop_zero_variance`` is off).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from training.trajectory.build import BuildReport, build_trajectories, mask_cut_calls
from training.trajectory.grpo import GroupReport, assign_group_advantages
from training.trajectory.merge import merge_prefix_calls
from training.trajectory.records import Sample, Trajectory


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
    mask_cut_replies: bool | str = False,
) -> tuple[list[Sample], BatchReport]:
    """``(samples, report)`` for ``(rollout, calls)`` pairs."""
    if not isinstance(mask_cut_replies, bool) and mask_cut_replies != "reinforced":
        raise ValueError(f"train.mask_cut_replies: {mask_cut_replies!r} (true | false | \"reinforced\")")
    trajectories, build_report = build_trajectories(items, gamma=gamma, tokenizer=tokenizer)
    if mask_cut_replies:  # before merging: one sample per call
        ahead = above_group_mean(trajectories) if mask_cut_replies == "reinforced" else None
        for traj in trajectories:
            if ahead is None or traj.rollout_id in ahead:
                mask_cut_calls(traj.samples, build_report)
    merged = merge and gamma == 1.0
    if merged:
        trajectories = [merge_prefix_calls(t) for t in trajectories]
    samples, groups = assign_group_advantages(
        trajectories, gamma=gamma, eps=eps, norm_by_std=norm_by_std, drop_zero_variance=drop_zero_variance
    )
    return samples, BatchReport(build=build_report, groups=groups, merged=merged, n_samples=len(samples))


def above_group_mean(trajectories: Sequence[Trajectory]) -> set[str]:
    """Ids of the rollouts whose reward is above their group's mean: those a GRPO step
    reinforces (a positive advantage, centred or divided by the group's std)."""
    groups: dict[str, list[Trajectory]] = {}
    for traj in trajectories:
        groups.setdefault(traj.group_id, []).append(traj)
    out: set[str] = set()
    for members in groups.values():
        mean = sum(t.reward for t in members) / len(members)
        out.update(t.rollout_id for t in members if t.reward > mean)
    return out
