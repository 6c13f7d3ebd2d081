"""A checkpoint's held-out gain over another's, paired by task (``gain_over``)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from testkit.evaluation import eval_report
from training.workflows.evaluate import MIN_PAIRED_TASKS, gain_over


def _tasks(rewards: list[list[float]], prefix: str = "t") -> dict[str, list[float]]:
    return {f"{prefix}{i}": r for i, r in enumerate(rewards)}


def test_task_difficulty_cancels_out_of_a_paired_gain() -> None:
    # tasks of very different difficulty, each up by ~0.1 after training: the rollout-level SE
    # of each evaluation is dominated by the spread between tasks, which the pairs cancel
    rng = random.Random(0)
    levels = [i / 24 for i in range(24)]
    before = eval_report(_tasks([[p + rng.gauss(0, 0.02) for _ in range(2)] for p in levels]))
    after = eval_report(_tasks([[p + 0.1 + rng.gauss(0, 0.02) for _ in range(2)] for p in levels]))
    up = gain_over(before, after)
    unpaired = math.hypot(before.stderr, after.stderr)
    assert up.paired_tasks == 24
    assert up.gain == pytest.approx(after.mean_reward - before.mean_reward)  # every task scored equally often
    assert up.se < unpaired / 5 and up.clear
    assert not up.gain > 2 * unpaired  # the unpaired verdict misses this gain


def test_a_gain_on_some_tasks_and_a_loss_on_others_is_not_clear() -> None:
    # per task: up 0.5, down 0.5, up 0.5, unchanged (x 6): a mean gain of 0.125 with a wide spread
    before = eval_report(_tasks([[0.5, 0.5]] * 24))
    after = eval_report(_tasks([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.5, 0.5]] * 6))
    up = gain_over(before, after)
    assert up.gain == pytest.approx(0.125) and up.paired_tasks == 24
    assert up.se == pytest.approx(statistics.stdev([0.5, -0.5, 0.5, 0.0] * 6) / math.sqrt(24))
    assert not up.clear


def test_the_gain_is_a_mean_over_tasks_scored_in_both() -> None:
    shared_before, shared_after = [[0.0], [0.4]] * 10, [[0.6], [0.6]] * 10  # up 0.6, up 0.2
    before = eval_report(_tasks(shared_before) | {"gone": [1.0]})
    after = eval_report(_tasks(shared_after) | {"new": [0.0]})
    up = gain_over(before, after)
    assert up.paired_tasks == 20
    assert up.gain == pytest.approx(0.4) and up.se == pytest.approx(statistics.stdev([0.6, 0.2] * 10) / math.sqrt(20))


def test_too_few_shared_tasks_fall_back_to_the_unpaired_difference() -> None:
    n = MIN_PAIRED_TASKS - 1
    before = eval_report(_tasks([[0.0, 0.1]] * n))
    after = eval_report(_tasks([[0.2, 0.3]] * n))
    up = gain_over(before, after)
    assert up.paired_tasks == 0
    assert up.gain == pytest.approx(0.2) and up.se == pytest.approx(math.hypot(before.stderr, after.stderr))
    assert up.se > 0
    # two tasks, each up by exactly 0.2: paired, the SE would be 0 and the verdict "clear"
    two = gain_over(eval_report(_tasks([[0.0], [0.4]])), eval_report(_tasks([[0.2], [0.6]])))
    assert two.paired_tasks == 0 and two.se == pytest.approx(math.hypot(0.2, 0.2)) and not two.clear
