"""Learning check: GRPO (and SFT → GRPO) on CPU raises held-out reward above the base model.

Task family (generated here, verifiable, where SmolLM2-135M succeeds sometimes): a strict
answer-format task through the ``react`` harness — "reply with only the word WORD". The
harness writes the episode's final reply to ``logs/agent/final_answer.txt``; the verifier
grades it: 1.0 when the reply is exactly the word (case, surrounding spaces and one trailing
punctuation mark ignored), 0.5 when the word appears in a longer reply, else 0. The base
model, prompted with the agent system prompt and tool schemas, names the word in ~15% of
replies and almost never replies with it alone, so GRPO groups have reward variance to learn
from. Held-out tasks use words never seen in training. The run:

1. base model → held-out mean reward;
2. GRPO from base for ``--steps`` steps → held-out reward (RL);
3. oracle-teacher distillation on SFT tasks → SFT → held-out (SFT) → GRPO → held-out (SFT+RL).

Prints reward per step and before/after, writes a PNG of the curves, states wall time.

    python bench/learning.py [--steps 8] [--device cpu|cuda] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = ("apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "piano", "ocean", "ember", "frost", "amber",
         "cedar", "delta", "eagle", "flint", "grape", "honey", "ivory", "jade", "koala", "lotus", "mango", "noble",
         "olive", "pearl", "quartz", "raven", "sage", "tulip", "umber", "viola", "willow", "yarrow", "zinc", "birch")
TEMPLATES = (
    "Reply with only the word {w}, nothing else.",
    "Answer with the single word {w} and nothing more.",
    "Your whole reply must be the word {w}.",
)

VERIFIER = """#!/usr/bin/env bash
# Grades the react harness's final reply (logs/agent/final_answer.txt) against one word.
LOGS="${{LOGS_DIR:-/logs}}"
mkdir -p "$LOGS/verifier"
python3 - "$LOGS/agent/final_answer.txt" "{word}" > "$LOGS/verifier/reward.txt" <<'PY'
import re, sys
try:
    reply = open(sys.argv[1], encoding="utf-8").read()
except OSError:
    reply = ""
word = sys.argv[2]
text = reply.strip().strip(chr(34) + chr(39) + chr(96)).rstrip(".!").strip().lower()
if text == word:
    print(1)
elif re.search(r"\\b" + re.escape(word) + r"\\b", reply, re.IGNORECASE):
    print(0.5)
else:
    print(0)
PY
"""


def make_task(root: Path, index: int, word: str, template: str):
    from environments.taskdir import TaskConfig, TaskSection, write_task

    config = TaskConfig(task=TaskSection(name=f"say-{word}", description="reply with exactly one given word"))
    config.metadata.domain = "bench"
    config.agent.timeout_sec = 240
    files = {
        "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
        "tests/test.sh": VERIFIER.format(word=word),
        "solution/solve.sh": f"#!/usr/bin/env bash\nmkdir -p \"${{LOGS_DIR:-/logs}}/agent\"\n"
                             f"printf '%s' {word} > \"${{LOGS_DIR:-/logs}}/agent/final_answer.txt\"\n",
        "solution/plan.json": json.dumps([{"final": word}]),
    }
    return write_task(root / f"say-{index:02d}-{word}", config, template.format(w=word), files)


def make_family(root: Path, seed: int, n_train: int, n_sft: int, n_eval: int):
    rng = random.Random(seed)
    words = list(WORDS)
    rng.shuffle(words)
    eval_words, rest = words[:n_eval], words[n_eval:]
    train = [make_task(root / "train", i, rest[i % len(rest)], TEMPLATES[i % 3]) for i in range(n_train)]
    sft = [make_task(root / "sft", i, rest[(i + n_train) % len(rest)], TEMPLATES[(i + 1) % 3]) for i in range(n_sft)]
    held_out = [make_task(root / "eval", i, w, TEMPLATES[i % 3]) for i, w in enumerate(eval_words)]
    return train, sft, held_out


async def held_out_reward(preset, tasks, model_path, label: str, samples: int) -> float:
    from training.workflows.evaluate import evaluate

    report = await evaluate(preset, tasks, model_path=model_path, k=1, n=samples, label=label)
    value = report.mean_reward
    print(f"  held-out reward [{label}]: {value:.3f}  ({report.harnesses[0].outcomes if report.harnesses else {}})", flush=True)
    return value


async def main_async(args: argparse.Namespace) -> int:
    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.admin import init_home
    from training.workflows.distill import distill
    from training.workflows.plots import curves_png
    from training.workflows.rl import rl_train
    from training.workflows.sft import sft_train

    t0 = time.perf_counter()
    home = Path(args.home or tempfile.mkdtemp(prefix="openforge-learning-"))
    os.environ["OPENFORGE_HOME"] = str(home)
    get_settings.cache_clear()
    init_home()
    train, sft_tasks, held_out = make_family(home / "family", args.seed, args.train_tasks, args.sft_tasks, args.eval_tasks)
    overrides = {
        "engine.device": args.device, "rollout.concurrency": args.concurrency, "rollout.max_tokens": 24,
        "rollout.temperature": 1.0, "harness_options.max_steps": 2, "harness_options.mode": "native",
        "train.group_size": args.group, "train.train_batch_size": args.batch_tasks, "train.lr": args.lr,
        "train.max_prompt_length": 2048, "train.max_response_length": 64, "train.micro_batch_size": 8,
        "sft.epochs": 2, "sft.lr": args.sft_lr, "sft.batch_size": 4, "sft.teacher_rollouts": 1,
    }
    preset = load_preset("local", overrides)
    print(f"learning check: {len(train)} train / {len(sft_tasks)} SFT / {len(held_out)} held-out tasks, "
          f"{args.steps} GRPO steps x {args.batch_tasks} tasks x G={args.group}, device={args.device}", flush=True)
    results: dict[str, float] = {}
    results["base"] = await held_out_reward(preset, held_out, None, "base", args.eval_samples)

    print("GRPO from base:", flush=True)
    rl = await rl_train(preset, train, steps=args.steps, run_id="learning-rl",
                        on_step=lambda r: print(f"  step {r.step}: reward {r.reward_mean:.3f} success {r.success_rate:.2f} "
                                                f"samples {r.samples} ({r.seconds:.0f}s)", flush=True))
    results["rl"] = await held_out_reward(preset, held_out, rl.checkpoint, "rl", args.eval_samples)

    print("SFT on oracle-teacher trajectories, then GRPO:", flush=True)
    distilled = await distill(preset, sft_tasks, teacher="oracle", n_per_task=1, run_id="learning-distill")
    print(f"  distilled {distilled.kept_trajectories} trajectories, {distilled.examples} examples", flush=True)
    sft = sft_train(preset, distilled.parquet, run_id="learning-sft")
    results["sft"] = await held_out_reward(preset, held_out, sft.checkpoint, "sft", args.eval_samples)
    sft_rl = await rl_train(preset, train, model_path=sft.checkpoint, steps=args.steps, run_id="learning-sft-rl",
                            on_step=lambda r: print(f"  step {r.step}: reward {r.reward_mean:.3f} ({r.seconds:.0f}s)", flush=True))
    results["sft+rl"] = await held_out_reward(preset, held_out, sft_rl.checkpoint, "sft+rl", args.eval_samples)

    png = curves_png(
        {"rl_from_base_train_reward": [(s.step, s.reward_mean) for s in rl.steps],
         "rl_after_sft_train_reward": [(s.step, s.reward_mean) for s in sft_rl.steps],
         "held_out_reward": list(enumerate([results["base"], results["rl"], results["sft"], results["sft+rl"]]))},
        Path(args.out) / "learning.png", title="held-out: 0 base, 1 RL, 2 SFT, 3 SFT+RL")
    wall = time.perf_counter() - t0
    print("\n| checkpoint | held-out mean reward |\n|---|---|")
    for k, v in results.items():
        print(f"| {k} | {v:.3f} |")
    print(f"\nRL gain over base: {results['rl'] - results['base']:+.3f}; SFT+RL >= SFT >= base: "
          f"{results['sft+rl'] >= results['sft'] >= results['base']}")
    print(f"curves: {png}\nwall time: {wall / 60:.1f} min")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--batch-tasks", type=int, default=4)
    p.add_argument("--train-tasks", type=int, default=12)
    p.add_argument("--sft-tasks", type=int, default=6)
    p.add_argument("--eval-tasks", type=int, default=8)
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--sft-lr", type=float, default=5e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--home", default=None)
    p.add_argument("--out", default="bench/out")
    p.add_argument("--quick", action="store_true", help="tiny run to check the wiring")
    args = p.parse_args()
    if args.quick:
        args.steps, args.train_tasks, args.sft_tasks, args.eval_tasks, args.batch_tasks, args.group = 1, 2, 1, 2, 1, 2
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
