"""GRPO/SFT loss maths on hand-built tensors and the loss-normalisation weights."""

from __future__ import annotations

import math

import pytest
import torch

from testkit.calls import chat_call, rollout
from training.trainers.local.losses import grpo_token_loss, kl_k3, token_weights
from training.trajectory import build_trajectory


def test_clipped_surrogate_by_hand() -> None:
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1, 0.5]]))  # ratios 1.5, 0.5, 1.1, 0.5
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    loss, clipped = grpo_token_loss(logp, old, adv, clip_low=0.2, clip_high=0.28)
    # A>0, ρ=1.5 → clip to 1.28: −1.28 ; A>0, ρ=0.5 → unclipped −0.5 (pessimistic max)
    # A<0, ρ=1.1 → 1.1 ; A<0, ρ=0.5 → max(0.5, 0.8) = 0.8 (clipped at 1−ε_low)
    assert loss[0].tolist() == pytest.approx([-1.28, -0.5, 1.1, 0.8], abs=1e-6)
    assert clipped[0].tolist() == [True, False, False, True]


def test_dual_clip_bounds_negative_advantage_loss() -> None:
    old = torch.zeros(1, 1)
    logp = torch.tensor([[math.log(10.0)]])
    adv = torch.tensor([[-1.0]])
    unbounded, _ = grpo_token_loss(logp, old, adv, clip_low=0.2, clip_high=0.2)
    bounded, _ = grpo_token_loss(logp, old, adv, clip_low=0.2, clip_high=0.2, dual_clip_c=3.0)
    assert unbounded.item() == pytest.approx(10.0, rel=1e-5) and bounded.item() == pytest.approx(3.0)


def test_k3_is_zero_at_equal_policies_and_positive_otherwise() -> None:
    lp = torch.tensor([[-1.0, -2.0]])
    assert kl_k3(lp, lp).abs().max().item() == 0.0
    k = kl_k3(lp, torch.tensor([[-1.5, -1.0]]))
    x = torch.tensor([-0.5, 1.0])
    assert k[0].tolist() == pytest.approx((torch.exp(x) - x - 1).tolist())


def test_per_rollout_weights_make_each_trajectory_weigh_the_same() -> None:
    long = build_trajectory(rollout("long"), [chat_call(i, [1], [2, 3, 4]) for i in range(3)])  # 9 tokens
    short = build_trajectory(rollout("short"), [chat_call(0, [1], [2])])  # 1 token
    samples = long.samples + short.samples
    w = token_weights(samples, "per_rollout")
    per_traj = {"long": 0.0, "short": 0.0}
    for s, wi in zip(samples, w, strict=True):
        per_traj[s.rollout_id] += wi * s.n_loss_tokens
    assert per_traj == pytest.approx({"long": 0.5, "short": 0.5})
    wt = token_weights(samples, "per_token")
    assert wt == pytest.approx([0.1] * 4)
    with pytest.raises(ValueError, match="loss_norm"):
        token_weights(samples, "per_call")
