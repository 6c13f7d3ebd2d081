"""Distillation's SFT data do not depend on the order the teacher's rollouts finished in."""

from __future__ import annotations

import random
import uuid
from types import SimpleNamespace

from training.trajectory import Sample, Trajectory
from training.workflows.distill import canonical_order


def _trajectory(task_id: str, response: list[int]) -> Trajectory:
    rid = uuid.uuid4().hex  # random like the real rollout ids: never part of the order
    sample = Sample(rollout_id=rid, group_id=task_id, call_index=0, prompt_ids=[1, 2], response_ids=response,
                    response_logprobs=None, reward=1.0, trajectory_reward=1.0, task_id=task_id)
    return Trajectory(rollout_id=rid, group_id=task_id, status="ok", reward=1.0, samples=[sample], calls=[],
                      task_id=task_id)


def test_trajectories_follow_the_task_order_then_their_tokens_whatever_order_they_finished_in() -> None:
    tasks = [SimpleNamespace(id=f"t{i}") for i in (3, 1, 2)]
    finished = [_trajectory("t2", [5]), _trajectory("t1", [9, 9]), _trajectory("t3", [4]), _trajectory("t1", [7]),
                _trajectory("t9", [1])]  # t9: a task not in the list goes last
    want = [("t3", [4]), ("t1", [7]), ("t1", [9, 9]), ("t2", [5]), ("t9", [1])]
    for seed in range(5):
        shuffled = list(finished)
        random.Random(seed).shuffle(shuffled)
        got = canonical_order(shuffled, tasks)  # type: ignore[arg-type]
        assert [(t.task_id, t.samples[0].response_ids) for t in got] == want
