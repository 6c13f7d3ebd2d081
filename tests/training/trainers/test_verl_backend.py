"""veRL backend on CPU: rows, masks, advantage/loss maths against veRL's core_algos, config, agent loop.

Skips when veRL is not installed (install it with ``scripts/install-verl.sh``).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL not installed: run scripts/install-verl.sh")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos", reason="veRL core_algos not importable")

from openforge.presets import list_presets, load_preset  # noqa: E402
from testkit.calls import chat_call, rollout, tiny_tokenizer  # noqa: E402
from training.trainers.local.losses import grpo_token_loss, kl_k3, token_weights  # noqa: E402
from training.trainers.verl.advantage import ESTIMATOR_NAME, openforge_grpo_advantage, register  # noqa: E402
from training.trainers.verl.config import ADV_ESTIMATOR, to_hydra_overrides, verl_config, verl_overrides  # noqa: E402
from training.trainers.verl.outputs import RecordedRollout, output_list  # noqa: E402
from training.trainers.verl.rows import UID_SEP, build_rows, to_data_proto  # noqa: E402
from training.trajectory import assign_group_advantages, build_trajectory  # noqa: E402
from training.trajectory.records import Sample  # noqa: E402


def _trajs():  # noqa: ANN202
    a = build_trajectory(rollout("a", reward=1.0), [chat_call(0, [1, 2], [3, 4]), chat_call(1, [1, 2, 3, 4, 9], [5])])
    b = build_trajectory(rollout("b", reward=0.0), [chat_call(0, [1, 2], [6])])
    c = build_trajectory(rollout("c", reward=0.5, group_id="h"), [chat_call(0, [7], [8, 8, 8])])
    d = build_trajectory(rollout("d", reward=0.0, group_id="h"), [chat_call(0, [7], [9])])
    return [a, b, c, d]


# ------------------------------------------------------------------ rows
def test_rows_layout_masks_and_broadcast_advantages() -> None:
    samples, _ = assign_group_advantages(_trajs())
    rows = build_rows(samples, pad_id=0, max_prompt_length=4, max_response_length=3)
    t = rows.tensors
    assert len(rows) == 5  # one row per call
    assert t["prompts"][1].tolist() == [2, 3, 4, 9]  # call 1 of "a" (prompt 1 2 3 4 9) keeps its last 4 tokens
    assert t["prompts"][0].tolist() == [0, 0, 1, 2]  # left padded
    assert t["responses"][0].tolist() == [3, 4, 0] and t["response_mask"][0].tolist() == [1, 1, 0]
    assert t["input_ids"].shape == (5, 7) and t["input_ids"][0].tolist() == [0, 0, 1, 2, 3, 4, 0]
    assert t["attention_mask"][0].tolist() == [0, 0, 1, 1, 1, 1, 0]
    assert t["position_ids"][0].tolist() == [0, 0, 0, 1, 2, 3, 3]
    adv_a = samples[0].advantage
    assert t["advantages"][0].tolist() == pytest.approx([adv_a, adv_a, 0.0])
    assert t["advantages"][1].tolist() == pytest.approx([adv_a, 0.0, 0.0])  # same trajectory, same advantage
    assert t["token_level_scores"][0].tolist() == [0.0, 1.0, 0.0]  # reward on the last policy token
    assert rows.non_tensors["uid"][0] == f"g{UID_SEP}a"
    assert t["rollout_log_probs"][0].tolist() == [-0.5, -0.5, 0.0]
    proto = to_data_proto(rows)
    assert len(proto) == 5 and proto.non_tensor_batch["rollout_id"].tolist() == ["a", "a", "b", "c", "d"]


# ------------------------------------------------------------- advantages
def test_one_row_per_trajectory_equals_verl_grpo() -> None:
    rng = np.random.default_rng(0)
    scores = torch.tensor(rng.integers(0, 2, size=12).astype(np.float32))
    scores[0:4] = torch.tensor([1.0, 0.0, 0.5, 0.25])
    mask = torch.ones(12, 5)
    mask[:, 3:] = 0
    rewards = torch.zeros(12, 5)
    rewards[:, 2] = scores
    index = np.array([f"task{i // 4}" for i in range(12)], dtype=object)
    ours, _ = openforge_grpo_advantage(rewards, mask, index)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index)
    assert torch.allclose(ours, theirs, atol=1e-6)
    ours_nostd, _ = openforge_grpo_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=False)
    theirs_nostd, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=False)
    assert torch.allclose(ours_nostd, theirs_nostd, atol=1e-6)


def test_multi_row_trajectories_and_dropped_rows_match_trajectory_grpo() -> None:
    trajs = _trajs()
    samples, _ = assign_group_advantages(trajs)
    rows = build_rows(samples, pad_id=0, max_prompt_length=8, max_response_length=4)
    # a dropped (timeout) rollout of group g comes back with an empty mask
    mask = torch.cat([rows.tensors["response_mask"], torch.zeros(1, 4, dtype=torch.long)])
    scores = torch.cat([rows.tensors["token_level_scores"], torch.zeros(1, 4)])
    index = np.concatenate([rows.non_tensors["uid"], np.array([f"g{UID_SEP}dropped"], dtype=object)])
    adv, _ = openforge_grpo_advantage(scores, mask, index)
    assert torch.allclose(adv[:-1], rows.tensors["advantages"], atol=1e-6)
    assert adv[-1].abs().sum() == 0
    # veRL's row-level grpo would treat the two calls of "a" and the dropped row as 3 extra members
    theirs, _ = core_algos.compute_grpo_outcome_advantage(scores, mask, np.array([u.split(UID_SEP)[0] for u in index], dtype=object))
    assert not torch.allclose(adv, theirs, atol=1e-3)


def test_estimator_registers_with_verl() -> None:
    assert register() == ESTIMATOR_NAME
    assert register() == ESTIMATOR_NAME  # idempotent
    assert core_algos.get_adv_estimator_fn(ESTIMATOR_NAME) is openforge_grpo_advantage


# ------------------------------------------------------------------ losses
class _ActorCfg(dict):
    """The few ActorConfig fields compute_policy_loss_vanilla reads."""

    def __init__(self, low: float, high: float, c: float) -> None:
        super().__init__(clip_ratio_c=c)
        self.clip_ratio, self.clip_ratio_low, self.clip_ratio_high = low, low, high
        self.global_batch_info = {}


def _random_batch(seed: int = 0):  # noqa: ANN202
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(6, 7, generator=g) * 3
    new = old + torch.randn(6, 7, generator=g) * 0.4
    adv = torch.randn(6, 1, generator=g).expand(6, 7).clone()
    mask = (torch.rand(6, 7, generator=g) > 0.25).float()
    mask[:, 0] = 1
    return old, new, adv, mask


def test_token_mean_policy_loss_equals_verl() -> None:
    old, new, adv, mask = _random_batch()
    cfg = _ActorCfg(0.2, 0.28, 3.0)
    theirs, _ = core_algos.compute_policy_loss_vanilla(old, new, adv, mask, loss_agg_mode="token-mean", config=cfg)
    per_tok, _ = grpo_token_loss(new, old, adv, clip_low=0.2, clip_high=0.28, dual_clip_c=3.0)
    ours = (per_tok * mask).sum() / mask.sum()  # per_token weights: 1 / total tokens
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)


def test_per_rollout_normalisation_equals_verl_seq_mean_token_mean_for_one_row_trajectories() -> None:
    old, new, adv, mask = _random_batch(1)
    cfg = _ActorCfg(0.2, 0.2, 3.0)
    theirs, _ = core_algos.compute_policy_loss_vanilla(old, new, adv, mask, loss_agg_mode="seq-mean-token-mean", config=cfg)
    per_tok, _ = grpo_token_loss(new, old, adv, clip_low=0.2, clip_high=0.2, dual_clip_c=3.0)
    one_row_trajectories = [Sample(rollout_id=f"r{i}", group_id="g", call_index=0, prompt_ids=[1], response_ids=[2] * 7, response_logprobs=None,
                   reward=0.0, trajectory_reward=0.0, loss_mask=[int(x) for x in mask[i].tolist()]) for i in range(6)]
    w = torch.tensor(token_weights(one_row_trajectories, "per_rollout")).unsqueeze(1)
    ours = (per_tok * mask * w).sum()
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)


def test_k3_equals_verl_low_var_kl() -> None:
    old, new, _, _ = _random_batch(2)
    assert torch.allclose(kl_k3(new, old), core_algos.kl_penalty(new, old, "low_var_kl"), atol=1e-6)


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("name", ["local", "claw", "computer-use", "browser-use"])
def test_config_from_every_preset_merges_into_verl_defaults(name: str) -> None:
    preset = load_preset(name)
    cfg = verl_config(preset, model_path="/models/policy")
    t = preset.train
    actor = cfg.actor_rollout_ref.actor
    assert cfg.algorithm.adv_estimator == ADV_ESTIMATOR == "grpo"  # v1's multi-output GRPO (see config.py)
    assert cfg.actor_rollout_ref.rollout.n == t.group_size
    vllm_args = cfg.actor_rollout_ref.rollout.engine_kwargs.vllm  # veRL's replicas accept `tools`
    assert vllm_args.enable_auto_tool_choice is True and vllm_args.tool_call_parser == "hermes"
    assert cfg.actor_rollout_ref.rollout.logprobs_mode == "processed_logprobs" and cfg.trainer.use_v1 is True
    assert actor.optim.lr == t.lr and actor.clip_ratio_low == t.clip_eps_low and actor.clip_ratio_high == t.clip_eps_high
    assert actor.loss_agg_mode == {"per_rollout": "seq-mean-token-mean", "per_token": "token-mean"}[t.loss_norm]
    assert actor.use_kl_loss == (t.kl_coef > 0) and actor.kl_loss_type == "low_var_kl"
    assert cfg.data.max_prompt_length == t.max_prompt_length and cfg.trainer.total_training_steps == t.steps
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "openforge"
    assert cfg.actor_rollout_ref.model.path == "/models/policy"


def test_hydra_overrides_are_flat_strings() -> None:
    flat = to_hydra_overrides(verl_overrides(load_preset("local", {"train.kl_coef": 0.01}), model_path="/m"))
    assert "actor_rollout_ref.actor.use_kl_loss=true" in flat
    assert "actor_rollout_ref.actor.kl_loss_coef=0.01" in flat
    assert "actor_rollout_ref.actor.optim.betas=[0.9,0.999]" in flat
    assert "trainer.logger=['console']" in flat
    assert "+actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser=hermes" in flat  # an added key
    assert set(list_presets()) >= {"local"}


# -------------------------------------------------------------- agent loop
def test_output_list_keeps_every_segment_and_drops_what_does_not_train() -> None:
    traj = build_trajectory(rollout("r", reward=1.0), [chat_call(0, [3, 4], [5, 6]), chat_call(1, [3, 4, 5, 6, 9], [7])])
    outs, counts = output_list(traj, prompt_length=8, response_length=8, global_steps=4)
    assert len(outs) == 1 and counts == {"segments": 1, "overlong_dropped": 0}
    assert outs[0]["prompt_ids"] == [3, 4] and outs[0]["response_ids"] == [5, 6, 9, 7]
    assert outs[0]["response_mask"] == [1, 1, 0, 1] and outs[0]["reward_score"] == 1.0
    assert outs[0]["extra_fields"]["min_global_steps"] == outs[0]["extra_fields"]["max_global_steps"] == 4
    # a rewritten history (OpenClaw, compaction, subagents): two segments, both trained
    split = build_trajectory(rollout("s", reward=1.0), [chat_call(0, [3], [5]), chat_call(1, [4, 4], [6])])
    outs, counts = output_list(split, prompt_length=8, response_length=8, global_steps=4)
    assert [o["prompt_ids"] for o in outs] == [[3], [4, 4]] and [o["response_ids"] for o in outs] == [[5], [6]]
    assert all(o["reward_score"] == 1.0 for o in outs) and counts["segments"] == 2
    # overlong segments are dropped and counted, never truncated; dropped rollouts give no output
    outs, counts = output_list(split, prompt_length=1, response_length=8)
    assert [o["prompt_ids"] for o in outs] == [[3]] and counts["overlong_dropped"] == 1
    assert output_list(None, prompt_length=8, response_length=8) == ([], {"segments": 0, "overlong_dropped": 0})


def test_output_list_spans_the_versions_its_calls_were_admitted_and_ended_under() -> None:
    """A weight sync lands during call 0 (admitted at 3, ended at 4); call 1 runs at 4. The calls
    are not merged (two behaviour policies) and each output's min/max_global_steps are its own
    calls' versions, not the step's."""
    from training.trainers.verl.outputs import final_versions

    first, second = chat_call(0, [3, 4], [5, 6]), chat_call(1, [3, 4, 5, 6, 9], [7])
    first["policy_version"], first["response"]["policy_version_final"] = 3, 4
    second["policy_version"] = 4
    traj = build_trajectory(rollout("r", reward=1.0), [first, second])
    assert final_versions([first, second]) == {0: 4, 1: 4}
    outs, _ = output_list(traj, prompt_length=8, response_length=8, global_steps=2,
                          final_versions=final_versions([first, second]))
    spans = [(o["extra_fields"]["min_global_steps"], o["extra_fields"]["max_global_steps"]) for o in outs]
    assert spans == [(3, 4), (4, 4)]
    # calls that record no version: the step's, as before
    plain = build_trajectory(rollout("p", reward=1.0), [chat_call(0, [3], [5])])
    outs, _ = output_list(plain, prompt_length=8, response_length=8, global_steps=2, final_versions={})
    assert (outs[0]["extra_fields"]["min_global_steps"], outs[0]["extra_fields"]["max_global_steps"]) == (2, 2)


def test_replica_engine_stamps_each_answer_with_the_step_its_replica_served() -> None:
    """The step is read before and after each call: the same → ``policy_version`` only; a
    sync in between → ``policy_version_final`` too; a replica without a reader → no stamp."""
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from training.trainers.verl.rollout import ReplicaEngine, stamp_versions

    served = {"step": 5}

    async def read() -> int:
        return served["step"]

    def sync_during_the_call(body: dict) -> FakeReply:
        served["step"] += 1
        return FakeReply.text("after a sync")

    body = {"model": "fake-policy", "messages": [{"role": "user", "content": "hi"}]}
    with FakeVLLM(responder=sync_during_the_call) as fake, FakeVLLM() as other:
        fake.script(FakeReply.text("steady"))

        async def calls() -> list[dict]:
            engine = ReplicaEngine([fake.base_url], model="fake-policy", versions={fake.base_url: read})
            try:
                out = [await engine.chat_completions(dict(body)), await engine.chat_completions(dict(body))]
                engine.add([other.base_url])  # learnt without a reader
                out.append(await engine.chat_completions(dict(body)))  # round-robin: fake, then other
                return [*out, await engine.chat_completions(dict(body))]
            finally:
                await engine.aclose()

        steady, synced, _, unversioned = asyncio.run(calls())
    assert steady["policy_version"] == 5 and "policy_version_final" not in steady
    assert (synced["policy_version"], synced["policy_version_final"]) == (5, 6)
    assert "policy_version" not in unversioned and other.requests
    assert stamp_versions({}, None, 7) == {"policy_version": 7}
    assert stamp_versions({}, None, None) == {}


def test_agent_loop_runs_a_rollout_through_the_rollout_function(tmp_path: Path) -> None:
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    from training.trainers.verl.agent_loop import OpenForgeAgentLoop, write_agent_loop_config

    seen = []

    async def rollout_fn(request):  # noqa: ANN001, ANN202
        seen.append(request)
        calls = [chat_call(0, [3, 4], [5, 6]), chat_call(1, [3, 4, 5, 6, 9], [7])]
        status = "timeout" if request.extra_info.get("fail") else "ok"
        return RecordedRollout(result=rollout("r1", status=status, reward=1.0), calls=calls)

    cfg = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 16, "response_length": 16}}, "data": {}})
    loop = OpenForgeAgentLoop(
        trainer_config=DictConfigWrap(cfg), server_manager=None, tokenizer=tiny_tokenizer(), processor=None,
        dataset_cls=None, data_config=DictConfigWrap(cfg.data), rollout_fn=rollout_fn, name="openforge",
    )
    outs = asyncio.run(loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "hello"}],
                                extra_info={"task_id": "t1"}, uid="u1", global_steps=3))
    assert seen[0].task_id == "t1" and seen[0].group_id == "u1" and seen[0].sampling_params == {"temperature": 1.0}
    assert seen[0].global_steps == 3
    out = outs[0]
    assert len(outs) == 1 and out.extra_fields["min_global_steps"] == 3
    assert out.response_mask == [1, 1, 0, 1] and out.reward_score == 1.0 and out.response_logprobs == [-0.5, -0.5, 0.0, -0.5]
    assert out.as_dict()["rm_scores"].tolist() == [0.0, 0.0, 0.0, 1.0]
    failed = asyncio.run(loop.run({}, raw_prompt=[], extra_info={"task_id": "t1", "fail": True}, uid="u1"))
    assert failed == []  # a timeout: no output, veRL leaves the session out of the group
    path = write_agent_loop_config(tmp_path / "loops.yaml", rollout_fn="pkg.mod:fn")
    loaded = OmegaConf.load(path)
    assert loaded[0].name == "openforge" and loaded[0]._target_ == "training.trainers.verl.agent_loop.OpenForgeAgentLoop"
    assert loaded[0].rollout_fn == "pkg.mod:fn"
    assert math.isfinite(out.extra_fields["openforge_rollout_seconds"])


def test_make_rollout_fn_runs_a_spec_and_fetches_its_calls() -> None:
    from environments.records import Outcome, RolloutResult
    from training.trainers.verl.outputs import RolloutRequest, make_rollout_fn

    specs = []

    async def run_one(spec):  # noqa: ANN001, ANN202
        specs.append(spec)
        status = Outcome.timeout if spec.task_id == "slow" else Outcome.ok
        return RolloutResult(rollout_id=spec.rollout_id, task_id=spec.task_id, group_id=spec.group_id, harness=spec.harness,
                             backend="local", status=status, reward=1.0 if status == Outcome.ok else None)

    async def fetch_calls(rollout_id):  # noqa: ANN001, ANN202
        return [chat_call(0, [1], [2])]

    preset = load_preset("local", {"harness_options.max_steps": 3, "rollout.max_total_tokens": 500})
    from training.workflows.common import harness_options

    fn = make_rollout_fn(run_one, fetch_calls, task_dir=lambda t: f"/tasks/{t}", harness="react", timeout_sec=60,
                         harness_options=harness_options(preset), cpus=2.0, memory_mb=2048)
    got = asyncio.run(fn(RolloutRequest(task_id="t1", group_id="u1", messages=[], sampling_params={"temperature": 0.7})))
    assert specs[0].task_dir == "/tasks/t1" and specs[0].group_id == "u1" and specs[0].timeout_sec == 60
    # the preset's harness options (and generation budget) are kept; veRL's sampling overrides temperature
    assert specs[0].harness_options == {**harness_options(preset), "temperature": 0.7}
    assert specs[0].harness_options["max_steps"] == 3 and specs[0].harness_options["max_total_tokens"] == 500
    assert (specs[0].cpus, specs[0].memory_mb) == (2.0, 2048)
    assert got.result.reward == 1.0 and len(got.calls) == 1
    slow = asyncio.run(fn(RolloutRequest(task_id="slow", group_id="u1", messages=[], sampling_params={})))
    assert slow.calls == []  # a dropped rollout's calls are not fetched
    with pytest.raises(ValueError, match="task_id"):
        asyncio.run(fn(RolloutRequest(task_id=None, group_id=None, messages=[], sampling_params={})))
