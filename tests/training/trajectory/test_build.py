"""Reconstruction of samples from recorded calls: rewards, outcomes, token ids."""

from __future__ import annotations

import pytest

from testkit.calls import chat_call, rollout, tiny_tokenizer
from training.trajectory import build_trajectories, build_trajectory, call_rewards
from training.trajectory.build import BuildReport, mask_cut_calls


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


def test_mask_cut_replies_masks_only_the_cut_calls_and_keeps_rewards_and_advantages() -> None:
    """DAPO's overlong filtering, per call: the cut call's tokens leave the loss; its rollout
    keeps its reward, so the group's advantages are what they were without the mask."""
    from training.trajectory import prepare_grpo_batch

    items = [
        (rollout("cut", reward=0.4), [chat_call(0, [1], [2], tool=("lookup", "{}")), _cut(chat_call(1, [1, 2, 3], [4]))]),
        (rollout("done", reward=1.0), [chat_call(0, [1], [2], tool=("lookup", "{}")), chat_call(1, [1, 2, 3], [5])]),
        (rollout("short", reward=0.0), [chat_call(0, [1], [6])]),
    ]
    plain, plain_report = prepare_grpo_batch(items, norm_by_std=False, merge=True)
    masked, report = prepare_grpo_batch(items, norm_by_std=False, merge=True, mask_cut_replies=True)
    assert plain_report.build.n_masked_cut_calls == 0
    assert {s.rollout_id: s.loss_mask for s in plain}["cut"] == [1, 0, 1]  # without the flag the cut reply trains
    by_id = {s.rollout_id: s for s in masked}
    # one merged sequence [R1][T1][R2]: R1 trained, the tool result and the cut reply not
    assert by_id["cut"].response_ids == [2, 3, 4] and by_id["cut"].loss_mask == [1, 0, 0]
    assert by_id["done"].loss_mask == [1, 0, 1] and by_id["short"].loss_mask == [1]
    assert [s.advantage for s in masked] == [s.advantage for s in plain] and by_id["cut"].advantage != 0.0
    assert report.build.n_masked_cut_calls == 1 and report.as_metrics()["cut_calls_masked"] == 1.0
    assert report.build.n_cut_replies == 1


def test_mask_cut_replies_reinforced_masks_a_cut_call_only_above_the_group_mean() -> None:
    """"reinforced": a cut reply in a rollout that beat its group (positive advantage) leaves the
    loss; one in a rollout that lost keeps its tokens, so the step still pushes it down."""
    from training.trajectory import prepare_grpo_batch

    def cut_rollout(rid: str, reward: float, group: str) -> tuple:
        return (rollout(rid, reward=reward, group_id=group),
                [chat_call(0, [1], [2], tool=("lookup", "{}")), _cut(chat_call(1, [1, 2, 3], [4]))])

    items = [
        cut_rollout("won", 0.5, "g"), (rollout("g-low", reward=0.0), [chat_call(0, [1], [6])]),  # g: mean 0.25
        cut_rollout("lost", 0.4, "h"), (rollout("h-top", reward=1.0, group_id="h"), [chat_call(0, [1], [5])]),  # h: 0.7
    ]
    plain, _ = prepare_grpo_batch(items, norm_by_std=False, merge=True)
    masked, report = prepare_grpo_batch(iter(items), norm_by_std=False, merge=True, mask_cut_replies="reinforced")
    by_id = {s.rollout_id: s for s in masked}
    assert by_id["won"].advantage > 0 and by_id["won"].loss_mask == [1, 0, 0]
    assert by_id["lost"].advantage < 0 and by_id["lost"].loss_mask == [1, 0, 1]
    assert [s.advantage for s in masked] == [s.advantage for s in plain]
    assert report.build.n_masked_cut_calls == 1 and report.build.n_cut_replies == 2
    with pytest.raises(ValueError, match="mask_cut_replies"):
        prepare_grpo_batch(items, mask_cut_replies="sometimes")


def test_a_rollout_whose_only_call_was_cut_has_nothing_to_train_with_mask_cut_replies() -> None:
    traj = build_trajectory(rollout("r", reward=0.0), [_cut(chat_call(0, [1], [2, 3]))])
    assert traj is not None
    mask_cut_calls(traj.samples, report := BuildReport())
    assert traj.reward == 0.0 and traj.samples[0].n_loss_tokens == 0 and report.n_masked_cut_calls == 1


@pytest.mark.parametrize(("mask", "expected"), [(False, [1, 0, 1]), (True, [1, 0, 0]), ("reinforced", [1, 0, 1])])
def test_the_sync_rl_step_reads_train_mask_cut_replies(mask: bool | str, expected: list[int]) -> None:
    from types import SimpleNamespace

    from openforge.presets import load_preset
    from training.workflows.rl import _sync_step

    items = [
        (rollout("cut", reward=0.4), [chat_call(0, [1], [2], tool=("lookup", "{}")), _cut(chat_call(1, [1, 2, 3], [4]))]),
        (rollout("done", reward=1.0), [chat_call(0, [1], [5])]),
    ]
    trained: list = []
    service = SimpleNamespace(recorded=lambda _results: items)
    trainer = SimpleNamespace(tokenizer=None, step=lambda samples: trained.extend(samples) or {"updated": 1.0})
    cfg = load_preset("local", {"train.mask_cut_replies": mask}).train
    report, _, _, _ = _sync_step(service, [], trainer, SimpleNamespace(policy_version=0), cfg)
    cut = next(s for s in trained if s.rollout_id == "cut")
    assert cut.loss_mask == expected  # "reinforced": 0.4 is below the group's mean (0.7), so it trains
    assert report.build.n_masked_cut_calls == expected.count(0) - 1
