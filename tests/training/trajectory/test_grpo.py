"""GRPO group advantages: trajectory level, broadcast to calls, zero-variance groups."""

from __future__ import annotations

import math

import pytest

from testkit.calls import chat_call, rollout
from training.trajectory import assign_group_advantages, build_trajectory, group_advantages


def _traj(rid: str, reward: float, n_calls: int, group: str = "g"):  # noqa: ANN202
    calls = [chat_call(i, [1, i], [2, 3]) for i in range(n_calls)]
    return build_trajectory(rollout(rid, reward=reward, group_id=group), calls)


def test_group_advantage_matches_hand_computation() -> None:
    advs, mean, std = group_advantages([1.0, 0.0, 0.0, 1.0])
    assert mean == 0.5
    assert std == pytest.approx(math.sqrt(1 / 3))  # unbiased std
    a = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    assert advs == pytest.approx([a, -a, -a, a])
    no_std, _, _ = group_advantages([1.0, 0.0], norm_by_std=False)
    assert no_std == [0.5, -0.5]


def test_advantage_is_broadcast_to_every_call_of_a_trajectory() -> None:
    trajs = [_traj("a", 1.0, 3), _traj("b", 0.0, 1)]
    samples, report = assign_group_advantages(trajs)
    assert len(samples) == 4
    a = [s.advantage for s in samples if s.rollout_id == "a"]
    b = [s.advantage for s in samples if s.rollout_id == "b"]
    assert len(set(a)) == 1 and a[0] > 0 and b[0] == pytest.approx(-a[0])
    assert report.zero_variance_groups == []


def test_gamma_discounts_earlier_calls_advantage() -> None:
    trajs = [_traj("a", 1.0, 3), _traj("b", 0.0, 3)]
    assign_group_advantages(trajs, gamma=0.5)
    adv = [s.advantage for s in trajs[0].samples]
    assert adv == pytest.approx([trajs[0].advantage * 0.25, trajs[0].advantage * 0.5, trajs[0].advantage])


def test_zero_variance_groups_are_reported_and_dropped_by_default() -> None:
    trajs = [_traj("a", 1.0, 2, "same"), _traj("b", 1.0, 1, "same"), _traj("c", 1.0, 1, "mixed"), _traj("d", 0.0, 1, "mixed"), _traj("e", 0.3, 2, "alone")]
    samples, report = assign_group_advantages(trajs)
    assert sorted(report.zero_variance_groups) == ["alone", "same"]
    assert {s.rollout_id for s in samples} == {"c", "d"}
    assert report.as_metrics()["zero_variance_fraction"] == pytest.approx(2 / 3)
    kept, _ = assign_group_advantages(trajs, drop_zero_variance=False)
    assert len(kept) == 7 and all(s.advantage == 0.0 for s in kept if s.group_id != "mixed")


def test_prepare_grpo_batch_reports_drops_and_merges() -> None:
    from training.trajectory import prepare_grpo_batch

    items = [
        (rollout("a", reward=1.0), [chat_call(0, [1], [2]), chat_call(1, [1, 2, 5], [3])]),
        (rollout("b", reward=0.0), [chat_call(0, [1], [4])]),
        (rollout("c", status="infra_error", reward=None), [chat_call(0, [1], [4])]),
        (rollout("d", reward=1.0, group_id="solo"), [chat_call(0, [1], [4])]),
    ]
    samples, report = prepare_grpo_batch(items, merge=True)
    assert sorted(s.rollout_id for s in samples) == ["a", "b"]
    assert [s.call_indices for s in samples if s.rollout_id == "a"] == [[0, 1]]
    assert dict(report.build.dropped) == {"infra_error": 1} and report.groups.zero_variance_groups == ["solo"]
    assert report.as_metrics()["groups"] == 2.0 and report.merged and report.n_samples == 2
    # gamma < 1: merging would give every merged call the last call's advantage, so it is off
    samples, report = prepare_grpo_batch(items, merge=True, gamma=0.9)
    assert not report.merged and [s.call_indices for s in samples if s.rollout_id == "a"] == [[0], [1]]
