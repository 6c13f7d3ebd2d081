"""The local trainer on a CUDA device: the checks `tests/training/trainers/test_local_trainer.py`
makes on CPU, on a GPU, plus the time of one GRPO step at the main job's size.

    python scripts/gpu_trainer_check.py     # torch with CUDA, transformers, and OpenForge's deps
    OPENFORGE_CHECK_DEVICE=cpu python scripts/gpu_trainer_check.py   # checks 1-4 on CPU (a test runs this)

On a GPU node with torch and transformers but no network (the device machines here), the
rest of what it imports travels as wheels: ``pip download --only-binary=:all: --python-version
3.12 --no-deps -d .gpu-wheels pydantic pydantic-core pydantic-settings annotated-types
typing-inspection typing-extensions python-dotenv sqlalchemy greenlet truststore``, then there
``pip install --no-index --no-deps --target /tmp/extra .gpu-wheels/*.whl`` and
``PYTHONPATH=/tmp/extra``. Run on an NVIDIA H200 (torch 2.11.0+cu130, transformers 5.17.0) on
2026-12-04: every check passed; docs/training-loop.md, session 19, has the figures.

Prints one line per check and exits non-zero at the first failure. It runs on a random tiny
Llama and on a random model of SmolLM2-135M's shape (no download, no checkpoint):

1. first-epoch ratio π_θ/π_engine = 1 against tokens drawn on the GPU by the local engine's
   own sampler (``choose_tokens``) at T ≠ 1, top-p and top-k, in float32;
2. ``train.compute_dtype = bfloat16`` on CUDA: the passes autocast to bf16, weights and
   optimiser stay float32, and the ratio against a bf16 engine stays 1 within bf16 numerics;
3. five GRPO steps move probability towards the better of two answers;
4. an SFT step lowers the NLL of its response tokens;
5. one GRPO step of 16 samples x ~510 tokens on the SmolLM2-135M shape, float32 and bf16:
   seconds (min / median / max of 3 after a warm-up) and peak GPU memory.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from transformers import LlamaForCausalLM

from openforge.presets import TrainConfig
from testkit.calls import chat_call, rollout
from testkit.models import sampled_group, tiny_llama
from training.trainers.local import LocalTrainer
from training.trainers.local.batching import collate, response_logprobs
from training.trajectory import assign_group_advantages, build_trajectory
from training.trajectory.records import SftExample

DEVICE = torch.device(os.environ.get("OPENFORGE_CHECK_DEVICE", "cuda"))  # "cpu" runs the same checks here


def llama(**shape: int) -> LlamaForCausalLM:
    """The trainer tests' tiny Llama with a tied head (the default model ties it)."""
    return tiny_llama(tied=True, max_len=2048, **shape)


def cfg(**kw: object) -> TrainConfig:
    base = {"lr": 1e-2, "micro_batch_size": 4, "max_grad_norm": 1e6, "dual_clip_c": None,
            "max_prompt_length": 1024, "max_response_length": 512}
    return TrainConfig(**{**base, **kw})


def peak_gib() -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if DEVICE.type == "cuda" else float("nan")


def sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def check(name: str, ok: bool, detail: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        sys.exit(1)


def main() -> None:
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_trainer_check: torch sees no CUDA device")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0) if DEVICE.type == 'cuda' else 'cpu'}", flush=True)

    for t, p, k in ((0.7, 1.0, 0), (0.6, 0.9, 0), (1.3, 0.8, 20)):
        model = llama().to(DEVICE)
        samples = sampled_group(model, t, p, k, device=DEVICE)
        m = LocalTrainer(model, None, cfg(), device=DEVICE).step(samples)
        check(f"first-epoch ratio at T={t} top_p={p} top_k={k}", abs(m["engine_ratio_mean"] - 1) < 1e-4
              and m["clipfrac"] == 0.0, f"engine ratio {m['engine_ratio_mean']:.6f}, clipfrac {m['clipfrac']}")

    model = llama()
    engine_model = copy.deepcopy(model).to(DEVICE, torch.bfloat16)
    samples = sampled_group(engine_model, 0.8, device=DEVICE)
    trainer = LocalTrainer(model, None, cfg(compute_dtype="bfloat16", lr=1e-3), device=DEVICE)
    seen: list[torch.dtype] = []
    trainer.model.get_output_embeddings().register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    m = trainer.step(samples)
    masters = {p.dtype for p in trainer.model.parameters()}
    check(f"bf16 autocast on {DEVICE.type}", bool(seen) and set(seen) == {torch.bfloat16} and masters == {torch.float32}
          and abs(m["engine_ratio_mean"] - 1) < 0.02,
          f"head out {set(seen)}, weights {masters}, ratio vs bf16 engine {m['engine_ratio_mean']:.4f}")

    trainer = LocalTrainer(llama(), None, cfg(), device=DEVICE)

    def seq_lp(resp: list[int]) -> float:
        with torch.no_grad():
            return float(response_logprobs(trainer.model, collate([[1, 3, 4]], [resp], [[1] * len(resp)], 0, DEVICE)).sum())

    win0, lose0 = seq_lp([5, 6]), seq_lp([7, 8])
    for _ in range(5):
        group, _ = assign_group_advantages([
            build_trajectory(rollout("w", reward=1.0), [chat_call(0, [1, 3, 4], [5, 6], logprobs=[-3.4, -3.4])]),
            build_trajectory(rollout("l", reward=0.0), [chat_call(0, [1, 3, 4], [7, 8], logprobs=[-3.4, -3.4])])])
        trainer.step(group)
    win1, lose1 = seq_lp([5, 6]), seq_lp([7, 8])
    check("GRPO moves probability to the better answer", win1 > win0 + 0.5 and lose1 < lose0 - 0.5,
          f"log p(win) {win0:.2f} -> {win1:.2f}, log p(lose) {lose0:.2f} -> {lose1:.2f}")

    sft = LocalTrainer(llama(), None, cfg(lr=1e-2), device=DEVICE)
    example = SftExample(input_ids=[1, 3, 4, 5, 6, 7], loss_mask=[0, 0, 0, 1, 1, 1])
    first = sft.sft_step([example])["loss"]
    for _ in range(3):
        last = sft.sft_step([example])["loss"]
    check("SFT lowers the NLL", last < first, f"loss {first:.3f} -> {last:.3f}")

    if DEVICE.type != "cuda":
        print("(the step time at SmolLM2-135M's shape is measured on cuda only)")
        return
    # the main job's shape: SmolLM2-135M (576 wide, 30 layers, 9 heads / 3 kv, 1536 MLP, 49152 vocab)
    big = llama(hidden=576, layers=30, heads=9, kv_heads=3, intermediate=1536, vocab=49152)
    gen = torch.Generator().manual_seed(0)
    trajs = []
    for g in range(4):
        prompt = torch.randint(3, 49152, (450,), generator=gen).tolist()
        for i in range(4):
            response = torch.randint(3, 49152, (60,), generator=gen).tolist()
            trajs.append(build_trajectory(rollout(f"b{g}{i}", reward=float(i % 2), group_id=f"G{g}"),
                                          [chat_call(0, prompt, response, logprobs=[-5.0] * len(response))]))
    samples, _ = assign_group_advantages(trajs)
    for dtype in ("float32", "bfloat16"):
        trainer = LocalTrainer(copy.deepcopy(big), None, cfg(lr=4e-5, compute_dtype=dtype, ppo_mini_batch_size=2),
                               device=DEVICE)
        trainer.step(samples)  # warm-up: kernels, allocator
        sync()
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            m = trainer.step(samples)
            sync()
            times.append(time.perf_counter() - t0)
        times.sort()
        check(f"GRPO step, SmolLM2-135M shape, {dtype}", m["updated"] == 1.0,
              f"16 samples x 510 tokens, {m['updates']:.0f} updates: {times[0]:.3f} / {times[1]:.3f} / {times[2]:.3f} s "
              f"(min / median / max of 3), peak {peak_gib():.1f} GiB")


if __name__ == "__main__":
    main()
