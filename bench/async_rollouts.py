"""Sync vs async GRPO steps with one injected straggler per step (issue 17).

Runs ``rl_train`` (the real path: in-process engine, recording proxy, a harness in local
sandboxes, the task's verifier, the local trainer) twice on the same tasks — once
synchronous (``train.async_rollouts = false``) and once asynchronous (``true``,
``--max-staleness``, default 1) — after a one-step synchronous warm-up that measures the
median rollout time m. In both runs every ``tasks × group_size``-th rollout started (one per
step's worth of rollouts) is a straggler: its result is held back 9·m after it finished,
with its scheduler slot taken, so it lasts ~10× the median.

Harness (``--harness``): ``command`` (default, cheap) runs a two-call Python client through
the proxy on a tiny task and writes the answer the verifier scores 1 half the time (a coin
flip: real reward variance, real GRPO advantages); ``react`` runs the react harness on
procedural contact-lookup tasks. The policy is the tests' tiny random Llama (2 layers,
hidden 64) unless ``--model``: generation costs little, so the engine is idle most of any
step; the bench measures time, not learning (``train.entropy_coef = 0.001`` and kept
zero-variance groups make every step update).

Per mode it prints each step's wall time and the engine's and trainer's idle share
(``StepRecord.engine_idle_seconds / seconds``, ``trainer_idle_seconds / seconds``), then
mean ± sd over n steps (``--skip-first``, default on, leaves out each run's first step,
which fills the pipeline) and async / sync ratios ± their standard error (delta method).

    python bench/async_rollouts.py [--steps 5] [--tasks 2] [--group-size 2] [--harness command|react] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def tiny_policy(folder: Path) -> Path:
    from testkit.models import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    build_tiny_model(len(tokenizer), max_len=16384).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


#: The ``command`` harness body: two chat calls through the proxy (the second carries the first
#: answer), then ``out.txt = hello`` half the time, which the task's verifier scores 1.
TWO_CALLS = """
import json, os, random, sys, urllib.request
def ask(messages):
    body = json.dumps({"model": "policy", "messages": messages, "max_tokens": int(sys.argv[2])}).encode()
    req = urllib.request.Request(os.environ["OPENFORGE_BASE_URL"] + "/chat/completions", data=body,
        headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENFORGE_ROLLOUT_TOKEN"]})
    return json.loads(urllib.request.urlopen(req, timeout=600).read())["choices"][0]["message"].get("content") or ""
first = ask([{"role": "user", "content": "Write the word hello."}])
ask([{"role": "user", "content": "Write the word hello."}, {"role": "assistant", "content": first},
     {"role": "user", "content": "Once more."}])
if random.random() < 0.5:
    open(os.path.join(sys.argv[1], "out.txt"), "w").write("hello")
"""


def hello_tasks(root: Path, n: int) -> list[Any]:
    from environments.taskdir import load_task
    from testkit.tasks import make_task

    return [load_task(make_task(root, f"hello-{i}")) for i in range(n)]


def make_tasks(root: Path, n: int) -> list[Any]:
    from synthesis.procedural.render import write_generated

    return write_generated(root, "contact-lookup", range(300, 300 + n))


class Straggler:
    """Wraps ``Scheduler._run``: every ``every``-th rollout started is held back ``extra`` s
    after it finished (inside the scheduler's concurrency slot); records rollout times."""

    def __init__(self) -> None:
        from training.orchestrator.scheduler import Scheduler

        self.every = 0
        self.extra = 0.0
        self.started = 0
        self.normal: list[float] = []
        self.stragglers = 0
        original = Scheduler._run
        bench = self

        async def run(sched: Any, spec: Any) -> Any:
            bench.started += 1
            slow = bench.every > 0 and bench.started % bench.every == 1 % bench.every
            t0 = time.perf_counter()
            result = await original(sched, spec)
            if slow:
                bench.stragglers += 1
                await asyncio.sleep(bench.extra)
            else:
                bench.normal.append(time.perf_counter() - t0)
            return result

        Scheduler._run = run  # type: ignore[method-assign]

    def arm(self, every: int, extra: float) -> None:
        self.every, self.extra, self.started = every, extra, 0


async def one_run(preset: Any, tasks: list[Any], steps: int, out: Path, run_id: str) -> list[Any]:
    from training.workflows.rl import rl_train

    records: list[Any] = []
    await rl_train(preset, tasks, steps=steps, run_id=run_id, out_dir=out, on_step=records.append)
    return records


def mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def ratio(a: list[float], b: list[float]) -> tuple[float, float]:
    """mean(a) / mean(b) and its standard error (delta method from the two standard errors)."""
    ma, sa = mean_sd(a)
    mb, sb = mean_sd(b)
    r = ma / mb if mb else float("nan")
    ea, eb = sa / math.sqrt(len(a)), sb / math.sqrt(len(b))
    rel = math.sqrt((ea / ma) ** 2 + (eb / mb) ** 2) if ma and mb else float("nan")
    return r, abs(r) * rel


def rows_of(records: list[Any], skip_first: bool) -> list[dict[str, float]]:
    rows = [{"step": r.step, "seconds": r.seconds, "engine_idle": r.engine_idle_seconds / r.seconds,
             "trainer_idle": r.trainer_idle_seconds / r.seconds, "samples": r.samples, "updates": r.updates,
             "stale_dropped": r.stale_dropped, "stale_corrected": r.stale_corrected, "spanning": r.spanning,
             "staleness": dict(r.staleness), "groups": r.groups, "outcomes": r.outcomes} for r in records]
    return rows[1:] if skip_first and len(rows) > 1 else rows


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from openforge.presets import load_preset

    work = Path(tempfile.mkdtemp(prefix="async-rollouts-"))
    model = Path(args.model) if args.model else tiny_policy(work / "tiny-policy")
    per_step = args.tasks * args.group_size
    if args.harness == "command":
        tasks = hello_tasks(work / "tasks", args.tasks)
        harness = {"rollout.harness": "command", "harness_options": {
            "argv": [sys.executable, "-c", TWO_CALLS, "{workspace}", str(args.max_tokens)]}}
    else:
        tasks = make_tasks(work / "tasks", args.tasks)
        harness = {"harness_options.max_steps": args.max_steps}
    base = {**harness,"engine.model_path": str(model), "engine.context_length": None,
            "train.group_size": args.group_size, "train.train_batch_size": args.tasks,
            "train.entropy_coef": 0.001, "train.drop_zero_variance_groups": False, "train.lr": 1e-4,
            "train.max_prompt_length": 16384, "train.max_response_length": 4096,
            "rollout.max_tokens": args.max_tokens, "rollout.max_total_tokens": args.max_tokens * args.max_steps,
            "rollout.concurrency": 2 * per_step}
    straggler = Straggler()
    t0 = time.perf_counter()
    await one_run(load_preset(args.preset, base), tasks, 1, work / "warmup", "bench-async-warmup")
    median = statistics.median(straggler.normal)
    print(f"warm-up: median rollout {median:.2f} s over {len(straggler.normal)} rollouts "
          f"({time.perf_counter() - t0:.0f} s); straggler: 1 in {per_step} rollouts held back {9 * median:.1f} s")
    out: dict[str, Any] = {"median_rollout_s": median, "straggler_extra_s": 9 * median, "per_step_rollouts": per_step}
    for mode in ("sync", "async"):
        straggler.arm(per_step, 9 * median)
        preset = load_preset(args.preset, {**base, "train.async_rollouts": mode == "async",
                                           "train.max_staleness": args.max_staleness,
                                           "train.stale_policy": args.stale_policy})
        t1 = time.perf_counter()
        records = await one_run(preset, tasks, args.steps, work / mode, f"bench-async-{mode}")
        out[mode] = {"rows": rows_of(records, args.skip_first), "run_seconds": time.perf_counter() - t1,
                     "stragglers": straggler.stragglers}
        straggler.stragglers = 0
        print_mode(mode, out[mode])
    return out


def print_mode(mode: str, data: dict[str, Any]) -> None:
    rows = data["rows"]
    print(f"\n{mode}: {len(rows)} steps counted, run {data['run_seconds']:.0f} s, {data['stragglers']} stragglers injected")
    print("  step  seconds  engine idle  trainer idle  samples  stale dropped/corrected  spanning  staleness")
    for r in rows:
        print(f"  {r['step']:4d}  {r['seconds']:7.2f}  {100 * r['engine_idle']:9.1f} %  {100 * r['trainer_idle']:10.1f} %"
              f"  {r['samples']:7d}  {r['stale_dropped']:7d}/{r['stale_corrected']:<7d}  {r['spanning']:9d}  {r['staleness']}")


def summary(out: dict[str, Any]) -> None:
    s, a = out["sync"]["rows"], out["async"]["rows"]
    print(f"\nmean ± sd over n = {len(s)} (sync) / {len(a)} (async) steps")
    for key, label, scale, unit in (("seconds", "wall per step", 1, "s"), ("engine_idle", "engine idle share", 100, "%"),
                                    ("trainer_idle", "trainer idle share", 100, "%")):
        ms, ss = mean_sd([r[key] * scale for r in s])
        ma, sa = mean_sd([r[key] * scale for r in a])
        r, e = ratio([x[key] for x in a], [x[key] for x in s])
        print(f"  {label:19} sync {ms:7.2f} ± {ss:5.2f} {unit}   async {ma:7.2f} ± {sa:5.2f} {unit}   "
              f"async/sync {r:5.2f} ± {e:4.2f}")
    for mode, rows in (("sync", s), ("async", a)):
        busy = [r["seconds"] * (1 - r["trainer_idle"]) for r in rows]
        m, sd = mean_sd(busy)
        print(f"  trainer busy per step ({mode}): {m:.2f} ± {sd:.2f} s (trainer.step + weight push, on the "
              "trainer's worker thread in both modes)")
    dropped = sum(r["stale_dropped"] for r in a)
    corrected = sum(r["stale_corrected"] for r in a)
    trained = sum(r["samples"] for r in a)
    print(f"  async: {trained} samples trained, {dropped} dropped and {corrected} corrected as stale")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="local")
    parser.add_argument("--model", help="Policy folder (default: a tiny random Llama built here).")
    parser.add_argument("--harness", default="command", choices=["command", "react"],
                        help="command: two proxy calls and a coin-flip reward on a tiny task (cheap); "
                             "react: the react harness on contact-lookup tasks.")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=2, help="Task groups per step.")
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=2, help="react steps per rollout.")
    parser.add_argument("--max-staleness", type=int, default=1)
    parser.add_argument("--stale-policy", default="drop", choices=["drop", "correct"])
    parser.add_argument("--skip-first", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args()
    os.environ.setdefault("OPENFORGE_HOME", tempfile.mkdtemp(prefix="async-rollouts-home-"))
    out = asyncio.run(main_async(args))
    summary(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
