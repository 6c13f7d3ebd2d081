"""Peak memory of one local-trainer GRPO step on long agent samples (issue 13's RSS hazard).

Builds ``--samples`` samples of one group that share a ``--prompt``-token head (each a few
tokens shorter, so rows are padded) with ``--response`` response tokens each, and runs one
``LocalTrainer.step`` of the default model (SmolLM2-135M from the model store) on CPU. A
thread samples the process RSS every 10 ms; prints the RSS before the step, the peak during
it, the step's wall time, and the settings. One configuration per run (RSS does not go back
down between runs in one process); compare rows of runs made on the same box.

    .venv/bin/python bench/train_memory.py [--micro 2] [--checkpointing] [--attn eager]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompt", type=int, default=2900, help="prompt tokens (the mini-swe-agent check's ~2-3k)")
    p.add_argument("--response", type=int, default=128)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--micro", type=int, default=2, help="train.micro_batch_size")
    p.add_argument("--checkpointing", action="store_true", help="train.gradient_checkpointing")
    p.add_argument("--attn", default=None, help="attention implementation (default: the model's, sdpa)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    import psutil
    import torch

    from openforge.presets import TrainConfig
    from training.engines.model_store import default_model_path, shared_cache_dir
    from training.trainers.local import LocalTrainer
    from training.trajectory.records import Sample

    torch.set_num_threads(args.threads)
    cfg = TrainConfig(lr=1e-6, micro_batch_size=args.micro, max_prompt_length=args.prompt + 64,
                      max_response_length=args.response + 64, gradient_checkpointing=args.checkpointing, kl_coef=0.0)
    trainer = LocalTrainer.from_pretrained(default_model_path(shared_cache_dir()), cfg)
    if args.attn:
        trainer.model.config._attn_implementation = args.attn
    rng = random.Random(args.seed)
    head = [rng.randrange(100, 40_000) for _ in range(args.prompt)]
    samples = [Sample(rollout_id=f"r{i}", group_id="g", call_index=0, prompt_ids=head[: args.prompt - 7 * i],
                      response_ids=[rng.randrange(100, 40_000) for _ in range(args.response)],
                      response_logprobs=[-2.0] * args.response, reward=float(i % 2), trajectory_reward=float(i % 2),
                      advantage=1.0 if i % 2 else -1.0) for i in range(args.samples)]
    proc = psutil.Process()
    before = proc.memory_info().rss
    peak, done = [before], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    metrics = trainer.step(samples)
    seconds = time.perf_counter() - t0
    done.set()
    watcher.join()
    gib = 2**30
    print(f"attention {trainer.model.config._attn_implementation}, checkpointing {args.checkpointing}, micro-batch "
          f"{args.micro}, {args.samples} samples x ({args.prompt} prompt + {args.response} response) tokens, "
          f"{args.threads} threads, seed {args.seed}")
    print(f"RSS before the step {before / gib:.2f} GiB, peak {peak[0] / gib:.2f} GiB (+{(peak[0] - before) / gib:.2f}), "
          f"step {seconds:.1f} s, updated {bool(metrics.get('updated'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
