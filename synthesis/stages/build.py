"""Build: turn selected candidates into task directories under ``Settings.tasks_dir``.

``materialize`` inserts one ``building`` task row per selected candidate (deterministic id
from the instruction hash: a candidate can never yield two tasks). ``build_one`` writes
the directory of a claimed task — procedurally from (family, seed), or by an agent in a
staging dir — through ``environments.taskdir.write_task`` (atomic, validated) and moves
the task to ``built``. An agent build is recorded as a ``build_agent`` check the moment it
returns, so a crash before the move never pays for it twice.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import tomllib
from pathlib import Path

from sqlalchemy import select

from environments.taskdir import TaskConfig, TaskDirError, validate_task, write_task
from environments.taskdir.model import normalize_raw
from storage.claims import transition_task
from storage.db import session_scope
from storage.models import Candidate, CandidateStatus, Task, TaskStatus
from synthesis import prompts
from synthesis.config import SynthContext
from synthesis.procedural.families import generate
from synthesis.procedural.render import task_config, task_files
from synthesis.stages.common import StageStats, Timer, add_check, add_task_cost, checks_for, load_task_row
from synthesis.store import _insert
from synthesis.tools import build_tools

log = logging.getLogger(__name__)


def task_id_for(cand: Candidate) -> str:
    fam = (cand.params or {}).get("family")
    stem = fam or re.sub(r"[^a-z0-9]+", "-", (cand.category or "task").lower()).strip("-") or "task"
    return f"{cand.domain}-{stem}-{cand.instruction_sha[:10]}"


def materialize(ctx: SynthContext) -> int:
    """Insert a ``building`` task for each selected candidate of the run that has none."""
    made = 0
    with session_scope(ctx.engine) as session:
        cands = session.execute(
            select(Candidate).where(Candidate.run_id == ctx.run_id, Candidate.status == CandidateStatus.selected.value,
                                    Candidate.id.not_in(select(Task.candidate_id).where(Task.candidate_id.is_not(None))))
        ).scalars().all()
        for cand in cands:
            tid = task_id_for(cand)
            stmt = _insert(ctx.engine, Task).values(
                id=tid, candidate_id=cand.id, domain=cand.domain, category=cand.category, purpose=cand.purpose,
                source="synthesis", dir=str(ctx.tasks_dir / tid), status=TaskStatus.building.value,
                synth_run_id=ctx.run_id, difficulty=(cand.params or {}).get("difficulty"),
            ).on_conflict_do_nothing(index_elements=["id"])
            made += session.execute(stmt).rowcount or 0
    return made


def _write_procedural(ctx: SynthContext, task: Task, cand: Candidate) -> Path:
    p = cand.params or {}
    spec = generate(p["family"], int(p["seed"]), p.get("difficulty"))
    config = task_config(spec, purpose=task.purpose, run_id=task.synth_run_id)
    dest = Path(task.dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_task(dest, config, spec.instruction, task_files(spec))
    return dest


def _skeleton(staging: Path, ctx: SynthContext, task: Task, cand: Candidate) -> None:
    """Seed an agent's staging dir: task.toml, instruction.md and the claw environment."""
    from environments.claw.taskgen import environment_files  # noqa: PLC0415

    services = list((cand.params or {}).get("services") or [])
    staging.mkdir(parents=True, exist_ok=True)
    config = TaskConfig.model_validate({
        "task": {"name": task.id, "description": (cand.category or "task")},
        "metadata": {"domain": cand.domain, "category": cand.category, "purpose": task.purpose,
                     "services": services, "synth_run_id": task.synth_run_id, "proposer": cand.proposer},
    })
    import tomli_w  # noqa: PLC0415

    (staging / "task.toml").write_text(tomli_w.dumps(config.to_toml_dict()), encoding="utf-8")
    (staging / "instruction.md").write_text(cand.instruction.rstrip() + "\n", encoding="utf-8")
    if services:
        for rel, content in environment_files(services, {}).items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content, encoding="utf-8")


def finalize_from(staging: Path, dest: Path, run_id: str | None) -> None:
    """Write the staging dir's files to ``dest`` with write_task (atomic, validated)."""
    problems = validate_task(staging)
    if problems:
        raise TaskDirError(problems)
    raw = tomllib.loads((staging / "task.toml").read_text(encoding="utf-8"))
    config = TaskConfig.model_validate(normalize_raw(raw, dest.name))
    config.task.name = dest.name
    config.openforge.synth_run_id = config.openforge.synth_run_id or run_id
    files: dict[str, str | bytes] = {}
    for path in sorted(staging.rglob("*")):
        rel = path.relative_to(staging).as_posix()
        if path.is_file() and rel not in {"task.toml", "instruction.md"} and "__pycache__" not in rel:
            files[rel] = path.read_bytes()
    write_task(dest, config, (staging / "instruction.md").read_text(encoding="utf-8"), files)


async def _build_agent(ctx: SynthContext, task: Task, cand: Candidate, stats: StageStats) -> None:
    assert ctx.runtime is not None
    staging = ctx.work_dir / "staging" / task.id
    done = [c for c in checks_for(ctx.engine, task.id) if c.kind == "build_agent" and c.passed]
    if not done:
        if staging.exists():
            shutil.rmtree(staging)
        await asyncio.to_thread(_skeleton, staging, ctx, task, cand)
        outcomes: list = []
        prompt = prompts.BUILD.format(domain=cand.domain, services=(cand.params or {}).get("services", []),
                                      instruction=cand.instruction)
        result = await ctx.runtime.run(prompt, build_tools(staging, ctx.checker, outcomes), staging,
                                       ctx.config.build_budget, system=prompts.SYSTEM)
        transcript = await asyncio.to_thread(result.save, ctx.work_dir / "transcripts" / f"build-{task.id}.json")
        add_check(ctx.engine, task.id, "build_agent", passed=result.ok, seconds=result.seconds, log_path=transcript,
                  detail={"cost_usd": result.cost_usd, "turns": result.turns, "tool_calls": result.tool_calls,
                          "stop": result.stop_reason, "error": result.error,
                          "checks": [o.model_dump() for o in outcomes]})
        add_task_cost(ctx.engine, task.id, cost_usd=result.cost_usd, seconds=result.seconds)
        stats.cost_usd += result.cost_usd
        if not result.ok:
            raise RuntimeError(f"build agent stopped: {result.error}")
    await asyncio.to_thread(finalize_from, staging, Path(task.dir), task.synth_run_id)


async def build_one(ctx: SynthContext, task_id: str, worker: str) -> StageStats:
    """Build the claimed task ``task_id``; it ends ``built`` or ``rejected`` (with the reason)."""
    stats, timer = StageStats("build", attempts=1), Timer()
    task, cand = load_task_row(ctx.engine, task_id)
    try:
        if cand is None:
            raise RuntimeError("task has no candidate to build from")
        if cand.proposer == "procedural":
            await asyncio.to_thread(_write_procedural, ctx, task, cand)
        else:
            await _build_agent(ctx, task, cand, stats)
        from environments.taskdir import load_task  # noqa: PLC0415

        td = load_task(task.dir)
        meta = td.config.openforge
        add_check(ctx.engine, task_id, "build", passed=True, seconds=timer.seconds,
                  detail={"content_sha": meta.content_sha, "cost_usd": stats.cost_usd})
        add_task_cost(ctx.engine, task_id, seconds=timer.seconds)
        transition_task(ctx.engine, task_id, TaskStatus.built, worker=worker, content_sha=meta.content_sha,
                        name=td.config.task.name, category=td.config.category, difficulty=td.config.difficulty,
                        error=None)
        stats.count = 1
    except (TaskDirError, RuntimeError, KeyError, ValueError, OSError) as exc:
        reason = f"build failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        log.warning("task %s: %s", task_id, reason)
        add_check(ctx.engine, task_id, "build", passed=False, seconds=timer.seconds, detail={"error": str(exc)[:2000]})
        transition_task(ctx.engine, task_id, TaskStatus.rejected, worker=worker, error=reason)
    stats.seconds = timer.seconds
    return stats
