"""Refine: patch a task that failed its checks, then send it back to test.

Procedural tasks are regenerated from (family, seed) — the generator is the source of
truth, so a failure there is an environment fault that a clean rebuild fixes or that
repeats until the budget ends. Agent-built tasks get an agent that reads the failing
checks and patches the files in a staging copy. Each refine iteration is recorded as a
``refine`` check before the task moves, so a crash never pays for an iteration twice.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

from storage.claims import transition_task
from storage.models import TaskStatus
from synthesis import prompts
from synthesis.config import SynthContext
from synthesis.stages.build import _write_procedural, finalize_from
from synthesis.stages.common import StageStats, Timer, add_check, add_task_cost, checks_for, load_task_row
from synthesis.tools import build_tools, failure_report

log = logging.getLogger(__name__)


async def refine_one(ctx: SynthContext, task_id: str, worker: str) -> StageStats:
    """Refine the claimed ``refining`` task; it ends ``built`` (to re-test) or ``rejected``."""
    stats, timer = StageStats("refine", attempts=1), Timer()
    task, cand = load_task_row(ctx.engine, task_id)
    iteration = task.refine_iters + 1
    if task.refine_iters >= ctx.config.max_refine or cand is None:
        transition_task(ctx.engine, task_id, TaskStatus.rejected, worker=worker,
                        error=f"{task.error or 'checks failed'} (refine budget of {ctx.config.max_refine} spent)")
        stats.seconds = timer.seconds
        return stats
    try:
        if cand.proposer == "procedural":
            await asyncio.to_thread(_write_procedural, ctx, task, cand)
        else:
            staging = ctx.work_dir / "refine" / f"{task_id}-{iteration}"
            done = [c for c in checks_for(ctx.engine, task_id)
                    if c.kind == "refine_agent" and (c.detail or {}).get("iteration") == iteration]
            if not done:
                if staging.exists():
                    shutil.rmtree(staging)
                shutil.copytree(task.dir, staging)
                failing = [{"kind": c.kind, "reward": c.reward, "error": (c.detail or {}).get("error"),
                            "checks": (c.detail or {}).get("checks")}
                           for c in checks_for(ctx.engine, task_id, task.content_sha) if not c.passed]
                outcomes: list = []
                prompt = prompts.REFINE.format(instruction=cand.instruction, failures=failure_report(failing))
                harness = ctx.config.test_harness if ctx.config.k_rollouts else None
                tools = build_tools(staging, ctx.checker, outcomes, harness)
                result = await ctx.runtime.run(prompt, tools, staging, ctx.config.refine_budget, system=prompts.SYSTEM)
                transcript = await asyncio.to_thread(
                    result.save, ctx.work_dir / "transcripts" / f"refine-{task_id}-{iteration}.json")
                add_check(ctx.engine, task_id, "refine_agent", passed=result.ok, seconds=result.seconds,
                          log_path=transcript,
                          detail={"iteration": iteration, "cost_usd": result.cost_usd, "turns": result.turns,
                                  "stop": result.stop_reason, "error": result.error})
                add_task_cost(ctx.engine, task_id, cost_usd=result.cost_usd, seconds=result.seconds)
                stats.cost_usd += result.cost_usd
            await asyncio.to_thread(finalize_from, staging, Path(task.dir), task.synth_run_id)
        from environments.taskdir import load_task  # noqa: PLC0415

        sha = load_task(task.dir).config.openforge.content_sha
        add_check(ctx.engine, task_id, "refine", passed=True, seconds=timer.seconds,
                  detail={"iteration": iteration, "content_sha": sha})
        transition_task(ctx.engine, task_id, TaskStatus.built, worker=worker, refine_iters=iteration, content_sha=sha)
        stats.count = 1
    except (OSError, ValueError, RuntimeError) as exc:
        reason = f"refine {iteration} failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        add_check(ctx.engine, task_id, "refine", passed=False, seconds=timer.seconds,
                  detail={"iteration": iteration, "error": str(exc)[:2000]})
        if iteration >= ctx.config.max_refine:
            transition_task(ctx.engine, task_id, TaskStatus.rejected, worker=worker, refine_iters=iteration, error=reason)
        else:  # back to test: the unchanged dir reuses its recorded checks and returns here
            transition_task(ctx.engine, task_id, TaskStatus.built, worker=worker, refine_iters=iteration, error=reason)
    stats.seconds = timer.seconds
    return stats
