"""GRPO and SFT losses, CleanRL-style: the maths next to the code, shapes noted.

Shapes: B sequences in a micro-batch, R = longest response in it. Every tensor below is
[B, R] and aligned to response tokens; ``mask`` is 1 on tokens the policy produced.
``weight`` carries the loss normalisation (per rollout or per token, see
:func:`token_weights`), so a step's loss is a plain weighted *sum* over its micro-batches
and gradient accumulation is exact however the batch is split.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from training.trajectory.records import Sample


def grpo_token_loss(
    logp: torch.Tensor,  # [B, R] log π_θ(a_t | s_t), with grad
    old_logp: torch.Tensor,  # [B, R] log π_old(a_t | s_t), recorded by the engine
    adv: torch.Tensor,  # [B, R] trajectory advantage broadcast to its tokens
    *,
    clip_low: float,
    clip_high: float,
    dual_clip_c: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Clipped surrogate per token: ``(loss [B, R], clipped [B, R] bool)``."""
    # ρ = π_θ / π_old, computed in log space (clamped like veRL for stability)
    log_ratio = torch.clamp(logp - old_logp, -20.0, 20.0)
    ratio = torch.exp(log_ratio)
    # L = max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high))   (PPO/DAPO "clip-higher")
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(unclipped, clipped)
    # dual clip (Ye et al. 2019): for A < 0 bound the loss by −A·c
    if dual_clip_c is not None:
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * dual_clip_c), loss)
    return loss, clipped > unclipped


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π_θ ‖ π_ref) per token, [B, R].

    With x = log π_ref − log π_θ:  k3 = eˣ − x − 1  (≥ 0, unbiased, low variance);
    clamped like veRL's ``low_var_kl``.
    """
    x = torch.clamp(ref_logp - logp, -20.0, 20.0)
    return torch.clamp(torch.exp(x) - x - 1.0, -10.0, 10.0)


def sft_token_loss(logp: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood per token, [B, R]: −log π_θ(y_t | y_<t, x)."""
    return -logp


def token_weights(samples: Sequence[Sample], mode: str) -> list[float]:
    """Per-sample weight of each of its loss tokens, so that Σ weight·loss is the step loss.

    ``per_rollout``: every trajectory weighs the same however many calls/tokens it has —
        w = 1 / (N_traj · tokens_in_its_trajectory)     → mean over trajectories of their token-mean
    ``per_token``:  w = 1 / total_tokens                  → one token-mean over the whole batch
    """
    if mode == "per_token":
        total = sum(s.n_loss_tokens for s in samples)
        return [1.0 / total if total else 0.0 for _ in samples]
    if mode != "per_rollout":
        raise ValueError(f"train.loss_norm: unknown mode {mode!r} (per_rollout | per_token)")
    per_traj: dict[str, int] = {}
    for s in samples:
        per_traj[s.rollout_id] = per_traj.get(s.rollout_id, 0) + s.n_loss_tokens
    n_traj = sum(1 for n in per_traj.values() if n > 0)
    return [1.0 / (n_traj * per_traj[s.rollout_id]) if per_traj[s.rollout_id] else 0.0 for s in samples]
