"""Test: validate, oracle must score 1.0, no-op must score 0.0, then k test-model rollouts.

Every check is a ``checks`` row tagged with the task's content sha the moment it finishes;
a resumed test reuses the rows of the same content, so no rollout is paid for twice. A
failing task goes to ``refining`` (with the reason) while the refine budget lasts, else to
``rejected``. SFT-purpose tasks only need a clean validation (test/refine are skipped).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from environments.taskdir import validate_task
from storage.claims import transition_task
from storage.models import TaskStatus
from synthesis.checker import NOOP, ORACLE, CheckOutcome
from synthesis.config import SynthContext
from synthesis.stages.common import StageStats, Timer, add_check, add_task_cost, checks_for, load_task_row

log = logging.getLogger(__name__)


async def _checked(ctx: SynthContext, task_id: str, task_dir: Path, sha: str, kind: str, harness: str,
                   index: int, stats: StageStats) -> tuple[float | None, bool, str | None]:
    """(reward, passed, error) of check ``kind``/``index`` on this content, running it if new."""
    for c in checks_for(ctx.engine, task_id, sha):
        if c.kind == kind and (c.detail or {}).get("index", 0) == index:
            return c.reward, c.passed, (c.detail or {}).get("error")
    outcome: CheckOutcome = await ctx.checker.check(task_dir, harness)
    if kind == ORACLE:
        passed = outcome.reward == 1.0
    elif kind == NOOP:
        passed = outcome.reward == 0.0
    else:
        passed = outcome.status in ("ok", "policy_error")
    error = outcome.error
    if error is None and not passed:
        error = f"{kind} scored {outcome.reward} (checks: {outcome.checks})"
    add_check(ctx.engine, task_id, kind, passed=passed, reward=outcome.reward, seconds=outcome.seconds,
              log_path=outcome.log_path, rollout_id=outcome.rollout_id,
              detail={"content_sha": sha, "index": index, "harness": harness, "status": outcome.status,
                      "error": error, "checks": outcome.checks, "cost_usd": outcome.cost_usd})
    add_task_cost(ctx.engine, task_id, cost_usd=outcome.cost_usd, seconds=outcome.seconds)
    stats.cost_usd += outcome.cost_usd
    stats.attempts += 1
    return outcome.reward, passed, error


def _fail(ctx: SynthContext, task_id: str, worker: str, reason: str, refine_iters: int) -> str:
    if refine_iters < ctx.config.max_refine:
        transition_task(ctx.engine, task_id, TaskStatus.refining, worker=worker, error=reason)
        return TaskStatus.refining.value
    transition_task(ctx.engine, task_id, TaskStatus.rejected, worker=worker,
                    error=f"{reason} (after {refine_iters} refine iterations)")
    return TaskStatus.rejected.value


async def run_checks_one(ctx: SynthContext, task_id: str, worker: str) -> StageStats:
    """Test the claimed ``built`` task; it ends verified, refining or rejected."""
    stats, timer = StageStats("test", attempts=0), Timer()
    task, _ = load_task_row(ctx.engine, task_id)
    task_dir, sha = Path(task.dir), task.content_sha or ""
    problems = await asyncio.to_thread(validate_task, task_dir)
    if not any(c.kind == "validate" for c in checks_for(ctx.engine, task_id, sha)):
        add_check(ctx.engine, task_id, "validate", passed=not problems,
                  detail={"content_sha": sha, "problems": [str(p) for p in problems]})
    if task.purpose == "sft":
        if problems:
            _fail(ctx, task_id, worker, f"invalid task dir: {problems[0]}", task.refine_iters)
        else:
            transition_task(ctx.engine, task_id, TaskStatus.verified, worker=worker, error=None)
            stats.count = 1
        stats.seconds = timer.seconds
        return stats
    transition_task(ctx.engine, task_id, TaskStatus.testing, worker=worker, keep_claim=True)
    if problems:
        _fail(ctx, task_id, worker, f"invalid task dir: {problems[0]}", task.refine_iters)
        stats.seconds = timer.seconds
        return stats
    for kind in (ORACLE, NOOP):
        _, passed, error = await _checked(ctx, task_id, task_dir, sha, kind, kind, 0, stats)
        if not passed:
            _fail(ctx, task_id, worker, f"{kind} check failed: {error}", task.refine_iters)
            stats.seconds = timer.seconds
            return stats
    rewards = []
    for j in range(ctx.config.k_rollouts):
        reward, passed, _ = await _checked(ctx, task_id, task_dir, sha, "rollout", ctx.config.test_harness, j, stats)
        if passed and reward is not None:
            rewards.append(reward)
    pass_rate = sum(rewards) / len(rewards) if rewards else None
    transition_task(ctx.engine, task_id, TaskStatus.verified, worker=worker, pass_rate=pass_rate, error=None)
    stats.count = 1
    stats.seconds = timer.seconds
    return stats
