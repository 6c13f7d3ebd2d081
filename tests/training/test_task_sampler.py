"""The GRPO task sampler: epochs over the tasks, and solved tasks out of the rotation."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from environments.records import Outcome, RolloutResult
from environments.taskdir.io import TaskDir
from synthesis.procedural.render import write_generated
from training.workflows.task_sampler import TaskSampler


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[TaskDir]:
    return write_generated(tmp_path_factory.mktemp("tasks"), "contact-lookup", range(8))


def _group(task: TaskDir, rewards: list[float], status: Outcome = Outcome.ok) -> list[RolloutResult]:
    return [RolloutResult(rollout_id=f"{task.id}-{i}", task_id=task.id, harness="react", backend="local",
                          status=status, reward=r) for i, r in enumerate(rewards)]


def test_every_task_comes_up_once_per_epoch_and_never_twice_in_a_step(tasks: list[TaskDir]) -> None:
    sampler = TaskSampler(tasks, random.Random(0))
    steps = [sampler.draw(3) for _ in range(8)]  # 24 draws: 3 epochs of 8
    assert all(len({t.id for t in s}) == 3 for s in steps)
    counts = Counter(t.id for s in steps for t in s)
    assert set(counts) == {t.id for t in tasks} and set(counts.values()) == {3}


def test_a_task_solved_in_every_rollout_leaves_the_rotation(tasks: list[TaskDir]) -> None:
    sampler = TaskSampler(tasks, random.Random(1), skip_solved=True)
    solved, nearly, failed = tasks[0], tasks[1], tasks[2]
    sampler.observe(_group(solved, [1.0, 1.0, 1.0, 1.0]) + _group(nearly, [1.0, 1.0, 0.9, 1.0])
                    + _group(failed, [1.0, 1.0, 1.0, 1.0], Outcome.infra_error))
    assert sampler.solved == {solved.id}
    drawn = Counter(t.id for _ in range(14) for t in sampler.draw(2))  # 28 draws over 7 unsolved tasks
    assert solved.id not in drawn and set(drawn.values()) == {4}
    # a later group below full reward puts it back
    sampler.observe(_group(solved, [1.0, 0.5, 1.0, 1.0]))
    assert sampler.solved == set()
    assert solved.id in {t.id for _ in range(4) for t in sampler.draw(2)}


def test_fewer_unsolved_tasks_than_a_step_needs_are_filled_from_the_solved(tasks: list[TaskDir]) -> None:
    sampler = TaskSampler(tasks, random.Random(2), skip_solved=True)
    sampler.observe([r for t in tasks[:6] for r in _group(t, [1.0, 1.0])])
    for _ in range(5):
        step = sampler.draw(4)
        ids = [t.id for t in step]
        assert len(set(ids)) == 4 and {tasks[6].id, tasks[7].id} <= set(ids)


def test_without_skipping_solved_tasks_stay_in_the_rotation(tasks: list[TaskDir]) -> None:
    sampler = TaskSampler(tasks, random.Random(3))
    sampler.observe(_group(tasks[0], [1.0, 1.0]))
    assert tasks[0].id in {t.id for _ in range(4) for t in sampler.draw(2)}


def test_more_tasks_per_step_than_there_are_repeats_them(tasks: list[TaskDir]) -> None:
    step = TaskSampler(tasks[:2], random.Random(4)).draw(5)
    assert len(step) == 5 and {t.id for t in step} == {tasks[0].id, tasks[1].id}
