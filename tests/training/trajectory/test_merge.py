"""Token-prefix merging of calls that extend each other."""

from __future__ import annotations

from testkit.calls import chat_call, rollout
from training.trajectory import build_trajectory, merge_prefix_calls


def test_extending_calls_merge_into_one_masked_sequence() -> None:
    calls = [
        chat_call(0, [1, 2], [3, 4], logprobs=[-0.1, -0.2]),
        chat_call(1, [1, 2, 3, 4, 9, 9], [5], logprobs=[-0.3]),  # history + tool result [9, 9]
        chat_call(2, [1, 2, 3, 4, 9, 9, 5, 8], [6, 7], logprobs=[-0.4, -0.5]),
    ]
    traj = build_trajectory(rollout("r"), calls)
    merged = merge_prefix_calls(traj)
    assert len(merged.samples) == 1
    s = merged.samples[0]
    assert s.prompt_ids == [1, 2]
    assert s.response_ids == [3, 4, 9, 9, 5, 8, 6, 7]
    assert s.loss_mask == [1, 1, 0, 0, 1, 0, 1, 1]
    assert s.response_logprobs == [-0.1, -0.2, 0.0, 0.0, -0.3, 0.0, -0.4, -0.5]
    assert s.call_indices == [0, 1, 2]
    assert s.n_loss_tokens == sum(x.n_loss_tokens for x in traj.samples)
    # the original trajectory is untouched
    assert len(traj.samples) == 3 and traj.samples[0].response_ids == [3, 4]


def test_calls_that_do_not_extend_start_a_new_sequence() -> None:
    calls = [
        chat_call(0, [1, 2], [3]),
        chat_call(1, [1, 2, 7, 9], [5]),  # rewritten history (e.g. OpenClaw): not a prefix
        chat_call(2, [1, 2, 7, 9, 5], [6]),  # extends call 1
    ]
    merged = merge_prefix_calls(build_trajectory(rollout("r"), calls))
    assert [s.call_indices for s in merged.samples] == [[0], [1, 2]]
    assert merged.samples[1].loss_mask == [1, 1]
