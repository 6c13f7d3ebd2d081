"""The ``openforge_grpo`` advantage estimator, registered into veRL's ``core_algos``.

veRL's ``grpo`` estimator normalises over *rows* sharing a ``uid``. OpenForge normalises over
*trajectories* (DESIGN §6), which differ when a trajectory spans several rows, and leaves
out rollouts that were dropped (infra_error/timeout: returned with an all-zero
``response_mask``). Rows are grouped by the part of ``uid`` before ``\\x1f`` (the task
group) and by trajectory (the part after it; a plain veRL uid means one row per
trajectory). A trajectory's reward R is its row score of largest magnitude (the last
call's: r_t = γ^(T−t)·R); its advantage A = (R − mean) / (std + ε) is broadcast to its
rows, scaled by r_row / R so γ < 1 discounts earlier calls exactly as
:func:`training.trajectory.grpo.assign_group_advantages` does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch

from training.trainers.verl.rows import UID_SEP
from training.trajectory.grpo import group_advantages

ESTIMATOR_NAME = "openforge_grpo"


def openforge_grpo_advantage(
    token_level_rewards: torch.Tensor,  # [N, R]
    response_mask: torch.Tensor,  # [N, R]
    index: np.ndarray | None = None,  # [N] uid strings
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any | None = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``, both [N, R], veRL's estimator signature."""
    if config is not None:
        norm_adv_by_std_in_grpo = bool(getattr(config, "norm_adv_by_std_in_grpo", norm_adv_by_std_in_grpo))
    n = token_level_rewards.shape[0]
    index = index if index is not None else np.arange(n).astype(str)
    scores = token_level_rewards.sum(dim=-1)  # [N]
    live = response_mask.sum(dim=-1) > 0  # [N] dropped rollouts have no trainable tokens
    trajectories: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in range(n):
        if not bool(live[row]):
            continue
        group, _, traj = str(index[row]).partition(UID_SEP)
        trajectories[group][traj or f"row{row}"].append(row)
    row_adv = torch.zeros(n, dtype=torch.float32)
    for trajs in trajectories.values():
        members = list(trajs.values())
        rewards = [float(max((scores[r] for r in rows), key=lambda x: abs(float(x)))) for rows in members]
        advs, _, _ = group_advantages(rewards, eps=epsilon, norm_by_std=norm_adv_by_std_in_grpo)
        for rows, big_r, adv in zip(members, rewards, advs, strict=True):
            for r in rows:
                row_adv[r] = adv * (float(scores[r]) / big_r if big_r else 1.0)
    advantages = row_adv.unsqueeze(-1) * response_mask.float()
    return advantages, advantages


def register() -> str:
    """Register the estimator with veRL (idempotent); returns its name for the config."""
    from verl.trainer.ppo import core_algos

    try:
        core_algos.get_adv_estimator_fn(ESTIMATOR_NAME)
    except ValueError:
        core_algos.register_adv_est(ESTIMATOR_NAME)(openforge_grpo_advantage)
    return ESTIMATOR_NAME
