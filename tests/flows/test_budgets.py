"""Wall-clock ceilings of the learning-loop tasks (tasks/budgets.py), from the preset's budgets."""

from __future__ import annotations

import pytest

from environments.deadline import hard_deadline
from openforge.presets import Preset, load_preset
from tasks.budgets import STARTUP_S, UPDATE_S, distill_s, evaluate_s, rl_s


#: A rollout's hard deadline at rollout.timeout_sec = 100: the engine's time on it does not count
#: against the timeout, up to this much wall time (environments/deadline.py).
T = hard_deadline(100)


@pytest.fixture
def preset() -> Preset:
    return load_preset("local", {"rollout.concurrency": 4, "rollout.timeout_sec": 100, "rollout.refill": True,
                                 "rollout.max_refills": 2, "rollout.group_size": None, "sft.teacher_rollouts": 3,
                                 "sft.epochs": 2, "sft.batch_size": 4, "train.train_batch_size": 2,
                                 "train.group_size": 4, "train.ppo_epochs": 1, "train.ppo_mini_batch_size": None})


def test_rollout_stages_get_one_timeout_per_wave_of_concurrent_rollouts(preset: Preset) -> None:
    assert evaluate_s(preset, tasks=8, samples=2, harnesses=1) == STARTUP_S + 4 * T  # 16 rollouts, 4 at a time
    assert evaluate_s(preset, tasks=8, samples=2, harnesses=2) == STARTUP_S + 8 * T
    assert distill_s(preset, tasks=3, n_per_task=None) == STARTUP_S + 3 * T  # 9 teacher rollouts: 3 waves
    assert distill_s(preset, tasks=3, n_per_task=1) == STARTUP_S + 1 * T


def test_grpo_adds_an_allowance_per_optimiser_update_to_its_rollouts(preset: Preset) -> None:
    # a GRPO step: 2 groups x 4 rollouts = 2 waves, + 2 refill waves, then 1 update
    assert rl_s(preset, steps=3) == STARTUP_S + 3 * (4 * T + UPDATE_S)
    assert rl_s(preset, steps=None) == STARTUP_S + preset.train.steps * (4 * T + UPDATE_S)
    preset.train.ppo_mini_batch_size = 1
    assert rl_s(preset, steps=1) == STARTUP_S + 4 * T + 2 * UPDATE_S


def test_sft_gets_an_allowance_per_optimiser_update_its_data_makes(preset: Preset) -> None:
    from tasks.budgets import UNKNOWN_SFT_EXAMPLES, sft_s

    # 10 examples in batches of 4: 3 updates an epoch, 2 epochs
    assert sft_s(preset, 10) == STARTUP_S + 6 * UPDATE_S
    assert sft_s(preset, None) == STARTUP_S + 2 * (UNKNOWN_SFT_EXAMPLES // 4) * UPDATE_S


def test_a_single_rollout_is_bounded_by_its_timeout_or_its_tasks_own_budgets(tmp_path) -> None:  # noqa: ANN001
    from environments.taskdir import load_task
    from tasks.budgets import single_rollout_s
    from testkit.tasks import make_task

    task = make_task(tmp_path, agent_timeout=60.0)
    cfg = load_task(task).config
    own = cfg.agent.timeout_sec + cfg.verifier.timeout_sec + cfg.environment.build_timeout_sec
    assert single_rollout_s(str(task), 100) == STARTUP_S + T  # openforge rollout --timeout 100
    assert single_rollout_s(str(task), None) == STARTUP_S + hard_deadline(own) != STARTUP_S + T


def test_tasks_verify_is_bounded_by_two_check_rollouts_per_task(tmp_path) -> None:  # noqa: ANN001
    from tasks.budgets import single_rollout_s, verify_s
    from testkit.tasks import make_task

    a, b = make_task(tmp_path, "a", agent_timeout=60.0), make_task(tmp_path, "b", agent_timeout=120.0)
    per = {d: single_rollout_s(str(d), None) - STARTUP_S for d in (a, b)}
    assert verify_s([str(a), str(b)]) == STARTUP_S + 2 * per[a] + 2 * per[b]
    assert verify_s([]) == STARTUP_S
