"""Reconstruction of samples from recorded calls: rewards, outcomes, token ids."""

from __future__ import annotations

import pytest

from testkit.calls import chat_call, rollout, tiny_tokenizer
from training.trajectory import build_trajectories, build_trajectory, call_rewards


def test_call_rewards_discount_from_the_end() -> None:
    assert call_rewards(1.0, 3, gamma=0.5) == [0.25, 0.5, 1.0]
    assert call_rewards(0.7, 2) == [0.7, 0.7]


def test_one_sample_per_call_in_index_order_with_discounted_rewards() -> None:
    calls = [chat_call(1, [1, 2, 3], [4, 5]), chat_call(0, [1, 2], [3]), chat_call(2, [9], [8, 7, 6])]
    traj = build_trajectory(rollout("r1", reward=1.0), calls, gamma=0.9)
    assert traj is not None
    assert [s.call_index for s in traj.samples] == [0, 1, 2]
    assert [s.reward for s in traj.samples] == pytest.approx([0.81, 0.9, 1.0])
    assert traj.samples[1].prompt_ids == [1, 2, 3] and traj.samples[1].response_ids == [4, 5]
    assert traj.samples[1].response_logprobs == [-0.5, -0.5]
    assert all(s.trajectory_reward == 1.0 and s.group_id == "g" for s in traj.samples)


def test_policy_error_trains_with_zero_reward_and_infra_timeout_are_dropped() -> None:
    calls = [chat_call(0, [1], [2])]
    items = [
        (rollout("ok", reward=0.5), calls),
        (rollout("pe", status="policy_error", reward=0.9), calls),
        (rollout("ie", status="infra_error", reward=None), calls),
        (rollout("to", status="timeout", reward=None), calls),
    ]
    trajs, report = build_trajectories(items)
    assert [t.rollout_id for t in trajs] == ["ok", "pe"]
    assert trajs[1].reward == 0.0 and trajs[1].samples[0].reward == 0.0
    assert report.dropped == {"infra_error": 1, "timeout": 1}
    assert report.n_samples == 2


def test_failed_calls_are_skipped_and_a_rollout_without_calls_is_dropped() -> None:
    traj = build_trajectory(rollout("r"), [chat_call(0, None, None, status="error"), chat_call(1, [1], [2])])
    assert traj is not None and [s.call_index for s in traj.samples] == [1]
    assert build_trajectory(rollout("r2"), []) is None


def test_mismatched_logprobs_are_ignored_not_misaligned() -> None:
    traj = build_trajectory(rollout("r"), [chat_call(0, [1], [2, 3], logprobs=[-1.0])])
    assert traj is not None and traj.samples[0].response_logprobs is None


def test_calls_without_token_ids_are_tokenized_and_flagged() -> None:
    tok = tiny_tokenizer()
    call = chat_call(0, None, None, text="answer 42")
    traj = build_trajectory(rollout("r"), [call], tokenizer=tok)
    assert traj is not None and traj.retokenized
    sample = traj.samples[0]
    assert sample.retokenized and sample.response_logprobs is None
    expected_prompt = tok.apply_chat_template([{"role": "user", "content": "hello"}], add_generation_prompt=True, tokenize=False)
    assert tok.decode(sample.prompt_ids) == expected_prompt.strip()
    assert tok.decode(sample.response_ids) == "answer 42 <|end|>"


def test_calls_without_token_ids_and_no_tokenizer_are_skipped() -> None:
    trajs, report = build_trajectories([(rollout("r"), [chat_call(0, None, None)])])
    assert trajs == [] and report.n_skipped_calls == 1 and report.dropped == {"no_calls": 1}


def test_rows_from_the_database(db_engine) -> None:  # noqa: ANN001
    from storage.db import session_scope
    from storage.models import ModelCall, Rollout
    from training.trajectory.source import load_rollouts_with_calls

    with session_scope(db_engine) as session:
        session.add(Rollout(id="db1", task_id="t", group_id="g", status="ok", reward=1.0, run_id="run"))
        session.add(Rollout(id="db2", task_id="t", group_id="g", status="timeout", run_id="run"))
        for i in (1, 0):
            c = chat_call(i, [1, i], [2, 3])
            session.add(ModelCall(rollout_id="db1", index=i, api="chat", request=c["request"], response=c["response"],
                                  prompt_token_ids=c["prompt_token_ids"], response_token_ids=c["response_token_ids"],
                                  response_logprobs=c["response_logprobs"], finish_reason="stop"))
    pairs = load_rollouts_with_calls(db_engine, run_id="run")
    trajs, report = build_trajectories(pairs)
    assert [t.rollout_id for t in trajs] == ["db1"]
    assert [s.call_index for s in trajs[0].samples] == [0, 1]
    assert trajs[0].samples[0].prompt_ids == [1, 0]
    assert report.dropped == {"timeout": 1}


def test_openai_style_logprob_entries_are_accepted() -> None:
    call = chat_call(0, [1], [2, 3])
    call["response_logprobs"] = [{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -0.2}]
    traj = build_trajectory(rollout("r"), [call])
    assert traj.samples[0].response_logprobs == [-0.1, -0.2]


def _cut(call: dict) -> dict:
    """``call`` ended by the token budget, not the model."""
    call["finish_reason"] = "length"
    call["response"]["choices"][0]["finish_reason"] = "length"
    return call


def test_a_reply_cut_at_the_cap_trains_with_its_score_and_is_counted() -> None:
    from training.trajectory import prepare_grpo_batch

    items = [
        (rollout("cut", reward=0.5), [chat_call(0, [1], [2], tool=("lookup", "{}")), _cut(chat_call(1, [1, 2, 3], [4]))]),
        (rollout("done", reward=1.0), [chat_call(0, [1], [2], tool=("lookup", "{}")), chat_call(1, [1, 2, 3], [5])]),
        (rollout("short", reward=0.0), [chat_call(0, [1], [6])]),
    ]
    trajs, report = build_trajectories(items)
    assert report.n_cut_replies == 1 and report.as_dict()["n_cut_replies"] == 1
    assert [t.reward for t in trajs] == [0.5, 1.0, 0.0] and [s.reward for s in trajs[0].samples] == [0.5, 0.5]
    _, batch = prepare_grpo_batch(items, norm_by_std=False)
    assert batch.as_metrics()["cut_reply_rollouts"] == 1.0
