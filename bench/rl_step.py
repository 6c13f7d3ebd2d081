"""Where one GRPO step's wall time goes: generation and training vs everything else.

Runs ``--steps`` GRPO steps of the preset's local composition (the in-process engine and the
local trainer; ``--set engine.kind=vllm`` for a vLLM server) on procedural claw tasks
(contact-lookup) with the react harness in local sandboxes, the real path of ``rl_train``
(:mod:`training.workflows.rl`), timing each part:

wall clock of the step: from the previous step's weight push (the run's start for step 1) to
its own, the phases one after the other. With ``train.prestart_rollouts`` (the default) a
step's rollouts start while the previous step trains and their first calls wait at a gate for
the new weights (``training/workflows/gate.py``): that start-up is then inside the previous
step's training phase ("started early by" says how long before the step they started).
  rollouts        ``service.run_groups`` (all rollouts of the step, concurrent) from the step's start
  generation      the time at least one engine call was in flight (union of the engine
                  calls' intervals, measured around the engine inside the proxy)
  reconstruction  reading the calls back + ``prepare_grpo_batch``
  training        ``trainer.step``
  weight sync     ``WeightSync.push`` (in place, or checkpoint + vLLM reload)
  orchestration   step − generation − training: everything the framework adds
    of which: to first call (rollout phase start → first engine call: sandboxes, runners,
    services, harness start-up), after last call (last engine call → all rollouts done:
    harness exit, verifier, report, cleanup), and weight sync + reconstruction

rollout-seconds (summed over the step's rollouts, which overlap; where the rollout phase goes)
  sandbox start   backend ``start_latency`` (sandbox up, runner started)
  harness         the runner's agent phase less the model calls it waited on
  gate wait       the calls' wait for the new weights (started early, see above)
  generation      engine time of the rollout's calls (their recorded latency less the gate wait)
  proxy           the proxy's own time per call (Server-Timing ``proxy``: budget, translation,
                  recording), read off the app's timing hook
  verifier        waiting for tests + the verifier (+ a separate verifier sandbox)

Prints one table per step, then over steps 2..n (step 1 has no step before it to start beside,
and pays first-use costs) mean ± sd and min / median / max, the seeds, and the orchestration
share of the step (goal < 5 %). Compare two builds or settings (``--set
train.prestart_rollouts=false``) by running both on the same machine, interleaved, with the
same arguments.

    python bench/rl_step.py [--steps 3] [--group-size 2] [--tasks 2] [--max-tokens 32] [--seed 0] [--model DIR] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def install_proxy_timing_hook() -> list[float]:
    """Collect the proxy's own ms per call (what its Server-Timing header reports)."""
    import training.proxy.routes.model_call as proxy_calls

    seen: list[float] = []
    original = proxy_calls._timed

    def timed(response: Any, timing: tuple[float, float], t_start: float) -> Any:
        seen.append((time.perf_counter() - t_start) * 1000 - timing[0])
        return original(response, timing, t_start)

    proxy_calls._timed = timed
    return seen


def make_tasks(root: Path, n: int) -> list[Any]:
    from synthesis.procedural.render import write_generated

    return write_generated(root, "contact-lookup", range(100, 100 + n))


def rollout_seconds(results: list[Any], calls: dict[str, list[Any]], proxy_ms: float, gate_s: float) -> dict[str, float]:
    """Where the rollouts' time went, summed over them; a call's recorded latency less the
    time it waited at the gate for the new weights (``gate_s`` in all) is generation."""
    out = {"sandbox start": 0.0, "harness": 0.0, "gate wait": gate_s, "generation": -gate_s,
           "proxy": proxy_ms / 1000, "verifier": 0.0}
    for r in results:
        t = r.timings
        waited = sum((c.latency_ms or 0.0) for c in calls.get(r.rollout_id, [])) / 1000  # gate wait + generation
        out["sandbox start"] += t.get("start_latency", t.get("setup", 0.0))
        out["generation"] += waited
        out["harness"] += max(0.0, t.get("runner_agent", t.get("agent", 0.0)) - waited)
        out["verifier"] += t.get("runner_wait_tests", 0.0) + t.get("runner_verifier", 0.0) + t.get("verifier_sandbox", 0.0)
    out["harness"] = max(0.0, out["harness"] - out["proxy"])
    return out


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    import random

    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.db import make_engine
    from storage.migrate import upgrade
    from training.trajectory.source import load_rollouts_with_calls
    from training.workflows.activity import TimedEngine, union_seconds
    from training.workflows.common import rollout_service
    from training.workflows.compose import compose
    from training.workflows.gate import CallGate, GatedEngine
    from training.workflows.rl import SyncStep, _policy, sync_steps
    from training.workflows.task_sampler import TaskSampler

    overrides = {"train.group_size": args.group_size, "train.train_batch_size": args.tasks,
                 "rollout.max_tokens": args.max_tokens, "harness_options.max_steps": args.max_steps,
                 "rollout.concurrency": args.group_size * args.tasks, "train.entropy_coef": 0.001,
                 "train.drop_zero_variance_groups": False}
    for item in args.set or []:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except ValueError:
            overrides[key] = value
    preset = load_preset(args.preset, overrides)
    plan = compose(preset, "rl")
    plan.require_runnable()
    work = Path(tempfile.mkdtemp(prefix="rl-step-"))
    tasks = make_tasks(work / "tasks", args.tasks)
    db = make_engine(get_settings().db_url)
    upgrade(get_settings().db_url, db)
    engine, trainer, sync = await _policy(preset, plan.engine.kind, args.model, work / "run", db, "bench-rl-step")
    timed = TimedEngine(engine)
    gate = CallGate()
    proxy_ms = install_proxy_timing_hook()
    sampler = TaskSampler(tasks, random.Random(args.seed))
    print(f"seeds: task sampling {args.seed}, train.seed {preset.train.seed}; engine {plan.engine.kind}; "
          f"train.prestart_rollouts {preset.train.prestart_rollouts}")
    rows: list[dict[str, Any]] = []
    proxy_seen = 0
    gated = GatedEngine(timed, gate)

    def on_step(done: SyncStep) -> None:
        # the step runs from `began` (the last weights in the engine) to `pushed`; rollouts
        # started earlier (prestart) ran beside the previous step's training, counted there
        nonlocal proxy_seen
        s0, s1 = done.began, done.rollouts_done
        calls = {row.id: c for row, c in load_rollouts_with_calls(db, rollout_ids=[r.rollout_id for r in done.results])}
        in_phase = [(a, b) for a, b in timed.activity.closed if s0 <= a < s1]
        wall = {"rollouts": s1 - s0, "generation": union_seconds(timed.activity.closed, s0, s1),
                "reconstruction": done.built - s1, "training": done.trained - done.built,
                "weight sync": done.pushed - done.trained, "step": done.pushed - s0,
                "started early by": max(0.0, s0 - done.rollouts_started),
                "to first call": min((a for a, _ in in_phase), default=s1) - s0,
                "after last call": s1 - max((b for _, b in in_phase), default=s1)}
        wall["orchestration"] = wall["step"] - wall["generation"] - wall["training"]
        rows.append({"step": done.step, "wall": wall,
                     "rollout_seconds": rollout_seconds(done.results, calls, sum(proxy_ms[proxy_seen:]),
                                                        sum(w for end, w in gated.waits if s0 <= end < done.pushed)),
                     "rollouts": len(done.results), "calls": sum(len(c) for c in calls.values()),
                     "outcomes": sorted({r.status.value for r in done.results}),
                     "samples": int(done.metrics.get("samples", 0)), "load1": os.getloadavg()[0]})
        proxy_seen = len(proxy_ms)
        print_step(rows[-1])

    try:
        async with rollout_service(preset, gated, run_id="bench-rl-step") as service:
            await sync_steps(service=service, trainer=trainer, engine=engine, sync=sync, cfg=preset.train,
                             sampler=sampler, steps=args.steps, gate=gate, on_step=on_step)
    finally:
        await engine.aclose()
        db.dispose()
    return rows


def print_step(row: dict[str, Any]) -> None:
    w = row["wall"]
    print(f"\nstep {row['step']}: {row['rollouts']} rollouts, {row['calls']} model calls, {row['samples']} samples, "
          f"outcomes {row['outcomes']}, 1-min load average at its start {row.get('load1', float('nan')):.1f}")
    print("  wall clock       seconds   share")
    for key in ("rollouts", "generation", "reconstruction", "training", "weight sync", "orchestration",
                "to first call", "after last call", "step"):
        print(f"  {key:15} {w[key]:8.2f}  {100 * w[key] / w['step']:5.1f} %")
    print(f"  (this step's rollouts started {w['started early by']:.2f} s before it, beside the last step's training)")
    print("  rollout-seconds (summed over overlapping rollouts)")
    for key, value in row["rollout_seconds"].items():
        print(f"  {key:15} {value:8.2f}")


def summary(rows: list[dict[str, Any]]) -> None:
    def ms(values: list[float]) -> str:
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return (f"{statistics.mean(values):8.2f} ± {sd:5.2f}   "
                f"[{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}]")

    print(f"\nover n = {len(rows)} steps {rows[0]['step']}..{rows[-1]['step']} (mean ± sd   [min / median / max])")
    for key in ("generation", "training", "reconstruction", "weight sync", "orchestration", "to first call",
                "after last call", "step", "started early by"):
        print(f"  {key:15} {ms([r['wall'][key] for r in rows])} s")
    for key in rows[0]["rollout_seconds"]:
        print(f"  {key + ' (r-s)':15} {ms([r['rollout_seconds'][key] for r in rows])} s")
    shares = [100 * r["wall"]["orchestration"] / r["wall"]["step"] for r in rows]
    print(f"orchestration share (step − generation − training) / step: {ms(shares)} %  (goal < 5 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="local")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=2, help="Task groups per step.")
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=2, help="react steps per rollout.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the task sampling (train.seed: --set).")
    parser.add_argument("--set", action="append", help="Preset override KEY=VALUE (repeatable).")
    parser.add_argument("--model", help="Start checkpoint (default: the preset's model), e.g. an SFT checkpoint "
                        "of the main job: its rollouts are as long as the job's.")
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args()
    os.environ.setdefault("OPENFORGE_HOME", tempfile.mkdtemp(prefix="rl-step-home-"))
    rows = asyncio.run(run(args))
    summary(rows[1:] if len(rows) > 1 else rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
