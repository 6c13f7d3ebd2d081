"""GRPO group advantages at the trajectory level (DESIGN §6).

For a group g of G trajectories of one task with rewards R_1..R_G:

    A_i = (R_i − mean_g R) / (std_g R + ε)          (std: unbiased, as veRL and DeepSeek's GRPO)

and every sample (call) t of trajectory i gets ``A_i · γ^(T−t)`` (γ = 1: A_i broadcast to
all its calls). Groups whose rewards are all equal carry no signal: their advantages are 0
and they are reported (and, by default, their samples are left out of the batch). A group
of one trajectory has no baseline and is treated as zero-variance — unlike veRL, which
passes its raw reward through (mean 0, std 1).
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from training.trajectory.records import Sample, Trajectory

log = logging.getLogger(__name__)


@dataclass
class GroupReport:
    """Per-step group statistics."""

    n_groups: int = 0
    n_trajectories: int = 0
    zero_variance_groups: list[str] = field(default_factory=list)
    group_means: dict[str, float] = field(default_factory=dict)
    group_stds: dict[str, float] = field(default_factory=dict)
    group_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def zero_variance_fraction(self) -> float:
        return len(self.zero_variance_groups) / self.n_groups if self.n_groups else 0.0

    def as_metrics(self) -> dict[str, float]:
        means = list(self.group_means.values())
        return {
            "groups": float(self.n_groups),
            "trajectories": float(self.n_trajectories),
            "zero_variance_groups": float(len(self.zero_variance_groups)),
            "zero_variance_fraction": self.zero_variance_fraction,
            "reward_mean": sum(means) / len(means) if means else 0.0,
        }


def group_advantages(
    rewards: Sequence[float], *, eps: float = 1e-6, norm_by_std: bool = True
) -> tuple[list[float], float, float]:
    """``(advantages, mean, std)`` of one group's trajectory rewards."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    if n < 2 or all(r == rewards[0] for r in rewards):
        return [0.0] * n, mean, std
    scale = (std + eps) if norm_by_std else 1.0
    return [(r - mean) / scale for r in rewards], mean, std


def assign_group_advantages(
    trajectories: Sequence[Trajectory],
    *,
    gamma: float = 1.0,
    eps: float = 1e-6,
    norm_by_std: bool = True,
    drop_zero_variance: bool = True,
) -> tuple[list[Sample], GroupReport]:
    """Set ``advantage`` on every trajectory and sample; return the samples to train on."""
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in trajectories:
        groups[traj.group_id].append(traj)
    report = GroupReport(n_groups=len(groups), n_trajectories=len(trajectories))
    samples: list[Sample] = []
    for group_id, members in groups.items():
        advs, mean, std = group_advantages([t.reward for t in members], eps=eps, norm_by_std=norm_by_std)
        report.group_means[group_id] = mean
        report.group_stds[group_id] = std
        report.group_sizes[group_id] = len(members)
        zero = all(a == 0.0 for a in advs)
        if zero:
            report.zero_variance_groups.append(group_id)
        for traj, adv in zip(members, advs, strict=True):
            traj.advantage = adv
            # Position of each call in the trajectory (1-based); a merged sample takes the
            # discount of its last call.
            position = {call.index: pos for pos, call in enumerate(traj.calls, start=1)}
            n_calls = len(traj.calls)
            for sample in traj.samples:
                pos = position.get(sample.call_indices[-1], n_calls)
                sample.advantage = adv * gamma ** (n_calls - pos)
            if not (zero and drop_zero_variance):
                samples.extend(traj.samples)
    if report.zero_variance_groups:
        log.info(
            "%d of %d groups have zero reward variance (no gradient): %s",
            len(report.zero_variance_groups), report.n_groups, report.zero_variance_groups[:10],
        )
    return samples, report
