"""Learning check: GRPO (from base, and after SFT) raises held-out reward on claw tasks.

The task family is the main job's: ``contact-lookup`` (synthesis/procedural/lookup.py), a
claw task over the real rollout path — the react harness (or ``--harness`` NAME, a
third-party binary) in a local sandbox, the contacts mock service, the recording proxy,
the task's verifier — with graded checks (right tool 0.2, the person in the query 0.2, a
reply naming the person 0.1, the right value 0.5). Held-out tasks are other seeds of the
family (other people, other attributes). The run:

1. base model → held-out reward;
2. GRPO from base for ``--steps`` steps → held-out reward (RL);
3. oracle-teacher distillation on SFT tasks → SFT → held-out (SFT) → GRPO → held-out (SFT+RL).

Every held-out figure is mean ± standard error over n = eval_tasks × eval_samples rollouts;
a gain counts when it exceeds twice the standard error of the difference, paired by
held-out task (both checkpoints ran the same tasks: training/workflows/evaluate.py,
``gain_over``). Prints reward per step, the before/after table, the verdicts and wall
time, and writes a PNG of the curves.

    python bench/learning.py [--steps N] [--seed S] [--device cpu|cuda] [--harness react] [--quick]

GRPO steps, group size, task groups per step and learning rate default to the preset's (the
main job's), so the check measures what `openforge pipeline --preset local` trains.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if TYPE_CHECKING:
    from training.workflows.evaluate import EvalReport  # loads torch

FAMILY = "contact-lookup"


def make_tasks(root: Path, first_seed: int, n: int):
    from synthesis.procedural.render import write_generated

    return write_generated(root, FAMILY, range(first_seed, first_seed + n))


class HeldOut:
    def __init__(self, label: str, report: EvalReport) -> None:
        self.label, self.report = label, report

    @property
    def mean(self) -> float:
        return self.report.mean_reward

    @property
    def se(self) -> float:
        return self.report.stderr

    @property
    def n(self) -> int:
        return self.report.samples

    def beats(self, other: HeldOut) -> tuple[bool, float, float, int]:
        """Up over ``other`` by more than 2 SE, paired by held-out task (gain_over)."""
        from training.workflows.evaluate import gain_over

        up = gain_over(other.report, self.report)
        return up.clear, up.gain, up.se, up.paired_tasks


async def held_out(preset, tasks, model_path, label: str, samples: int, harness: str) -> HeldOut:
    from training.workflows.evaluate import evaluate

    report = await evaluate(preset, tasks, model_path=model_path, harnesses=(harness,), k=1, n=samples, label=label)
    h = report.harnesses[0] if report.harnesses else None
    result = HeldOut(label, report)
    print(f"  held-out [{label}]: {result.mean:.3f} ± {result.se:.3f} (n={result.n}) {h.outcomes if h else {}}", flush=True)
    return result


def _unchanged(label: str, start: HeldOut) -> HeldOut:
    """GRPO made no update: the checkpoint is its start, so its held-out figure is the start's."""
    print(f"  held-out [{label}]: unchanged weights, the start's {start.mean:.3f} ± {start.se:.3f} (n={start.n})", flush=True)
    return HeldOut(label, start.report)


async def _grpo(preset, train, model_path, args: argparse.Namespace, run_id: str):
    """GRPO for ``args.steps``; None (reported, not raised) when it made no optimiser update."""
    from training.workflows.rl import NoLearningSignal, rl_train

    try:
        return await rl_train(preset, train, model_path=model_path, steps=args.steps, run_id=run_id,
                              on_step=lambda r: print(_step_line(r), flush=True))
    except NoLearningSignal as exc:
        print(f"  GRPO made no update: {exc}", flush=True)
        return None


def _step_line(r) -> str:
    return (f"  step {r.step}: train reward {r.reward_mean:.3f}  samples {r.samples}  zero-var groups "
            f"{r.zero_variance_groups}/{r.groups}  updates {r.updates}  solved tasks "
            f"{r.metrics.get('solved_tasks', 0):.0f}  ({r.seconds:.0f}s)")


async def main_async(args: argparse.Namespace) -> int:
    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.admin import init_home
    from training.workflows.distill import distill
    from training.workflows.plots import curves_png
    from training.workflows.sft import sft_train

    t0 = time.perf_counter()
    home = Path(args.home or tempfile.mkdtemp(prefix="openforge-learning-"))
    os.environ["OPENFORGE_HOME"] = str(home)
    get_settings.cache_clear()
    init_home()
    base_seed = 10_000 * (args.seed + 1)
    train = make_tasks(home / "family" / "train", base_seed, args.train_tasks)
    sft_tasks = make_tasks(home / "family" / "sft", base_seed + 3000, args.sft_tasks)
    eval_tasks = make_tasks(home / "family" / "eval", base_seed + 6000, args.eval_tasks)
    overrides = {"engine.device": args.device, "rollout.harness": args.harness, "train.seed": args.seed}
    for key, value in (("train.steps", args.steps), ("train.group_size", args.group),
                       ("train.train_batch_size", args.batch_tasks), ("train.lr", args.lr)):
        if value is not None:  # else the preset's (the main job's) value
            overrides[key] = value
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE (a dotted preset key)")
        try:
            overrides[key] = json.loads(value)
        except ValueError:
            overrides[key] = value  # a plain string
    preset = load_preset(args.preset, overrides)
    args.steps, args.group, args.batch_tasks, args.lr = (preset.train.steps, preset.train.group_size,
                                                         preset.train.train_batch_size, preset.train.lr)
    print(f"learning check ({FAMILY}, harness {args.harness}, seed {args.seed}): {len(train)} train / "
          f"{len(sft_tasks)} SFT / {len(eval_tasks)} held-out tasks x {args.eval_samples} samples; "
          f"{args.steps} GRPO steps x {args.batch_tasks} tasks x G={args.group}, lr {args.lr}, device={args.device}",
          flush=True)
    results: dict[str, HeldOut] = {}
    results["base"] = await held_out(preset, eval_tasks, None, "base", args.eval_samples, args.harness)

    rl = None
    if args.skip_rl_from_base:
        print("GRPO from base: skipped (--skip-rl-from-base)", flush=True)
    else:
        print("GRPO from base:", flush=True)
        rl = await _grpo(preset, train, None, args, f"learning-rl-{args.seed}")
        results["rl"] = (await held_out(preset, eval_tasks, rl.checkpoint, "rl", args.eval_samples, args.harness)
                         if rl else _unchanged("rl", results["base"]))

    print("SFT on oracle-teacher trajectories, then GRPO:", flush=True)
    distilled = await distill(preset, sft_tasks, teacher="oracle", run_id=f"learning-distill-{args.seed}")
    print(f"  distillation: {distilled.rollouts} teacher rollouts {distilled.outcomes}, "
          f"{distilled.kept_trajectories} kept, {distilled.examples} SFT examples", flush=True)
    if not distilled.examples:
        print(f"learning check FAILED: oracle-teacher distillation through {args.harness} kept no SFT example "
              f"(outcomes {distilled.outcomes}, filters {distilled.filters}; logs under {home / 'rollouts'})",
              file=sys.stderr, flush=True)
        return 1
    try:
        sft = sft_train(preset, distilled.parquet, run_id=f"learning-sft-{args.seed}")
    except ValueError as exc:  # e.g. every example longer than sft.max_length: SFT made no update
        print(f"learning check FAILED: SFT: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"  SFT: {sft.examples} examples, {sft.overlong_dropped} overlong dropped, {sft.updates} updates, "
          f"final loss {sft.losses[-1]:.3f}", flush=True)
    results["sft"] = await held_out(preset, eval_tasks, sft.checkpoint, "sft", args.eval_samples, args.harness)
    sft_rl = await _grpo(preset, train, sft.checkpoint, args, f"learning-sft-rl-{args.seed}")
    results["sft+rl"] = (await held_out(preset, eval_tasks, sft_rl.checkpoint, "sft+rl", args.eval_samples, args.harness)
                         if sft_rl else _unchanged("sft+rl", results["sft"]))

    png = curves_png(
        {"rl_from_base_train_reward": [(s.step, s.reward_mean) for s in rl.steps] if rl else [],
         "rl_after_sft_train_reward": [(s.step, s.reward_mean) for s in sft_rl.steps] if sft_rl else [],
         "held_out_reward": list(enumerate(r.mean for r in results.values()))},
        Path(args.out) / f"learning-{args.harness}-seed{args.seed}.png",
        title="held-out: " + ", ".join(f"{i} {k}" for i, k in enumerate(results)))
    wall = time.perf_counter() - t0
    print("\n| checkpoint | held-out mean ± SE | n | optimiser updates |\n|---|---|---|---|")
    updates = {"base": 0, "rl": rl.updates if rl else 0, "sft": sft.updates, "sft+rl": sft_rl.updates if sft_rl else 0}
    for k, r in results.items():
        print(f"| {k} | {r.mean:.3f} ± {r.se:.3f} | {r.n} | {updates[k]} |")
    print()
    for a, b in (("rl", "base"), ("sft", "base"), ("sft+rl", "sft")):
        if a not in results:
            continue
        ok, diff, se, tasks = results[a].beats(results[b])
        pairing = f"paired over {tasks} held-out tasks" if tasks else "unpaired: too few held-out tasks to pair"
        print(f"{a} vs {b}: {diff:+.3f} (SE of the difference {se:.3f}, {pairing}) -> "
              f"{'beats it by > 2 SE' if ok else 'NOT > 2 SE'}")
    print(f"curves: {png}\nwall time: {wall / 60:.1f} min")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="local")
    p.add_argument("--harness", default="react", help="react, or a third-party harness binary (mini-swe-agent ...)")
    p.add_argument("--steps", type=int, default=None, help="GRPO steps per run (default: the preset's)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--group", type=int, default=None, help="group size (default: the preset's)")
    p.add_argument("--batch-tasks", type=int, default=None, help="task groups per step (default: the preset's)")
    p.add_argument("--train-tasks", type=int, default=24)
    p.add_argument("--sft-tasks", type=int, default=8, help="SFT tasks (the main job's light SFT: 8)")
    p.add_argument("--eval-tasks", type=int, default=32, help="held-out tasks (the main job's: 32)")
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--lr", type=float, default=None, help="GRPO learning rate (default: the preset's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--home", default=None)
    p.add_argument("--out", default="bench/out")
    p.add_argument("--quick", action="store_true", help="tiny run to check the wiring")
    p.add_argument("--skip-rl-from-base", action="store_true",
                   help="no GRPO from base (for a harness whose base policy never scores, e.g. a third-party "
                        "binary's long prompt on the 135M default: every group would be zero-variance)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a preset override, e.g. rollout.concurrency=8 (repeatable; JSON values)")
    args = p.parse_args()
    if args.quick:
        args.steps, args.train_tasks, args.sft_tasks, args.eval_tasks, args.batch_tasks, args.group = 1, 2, 2, 2, 1, 4
        args.eval_samples = 2
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
