"""Propose: append candidate instructions for the run until enough are waiting for prune.

Procedural backend: candidate ``i`` of a run is generated from (family, seed(run, i)),
grounded in a pool item of that family; regenerating ``i`` yields the same instruction,
which the unique (domain, instruction_sha) rejects, so re-runs add nothing twice. Agent
backends: each agent call has a ledger key; a completed call is never repeated.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import defaultdict

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from storage.db import session_scope
from storage.models import Candidate, CandidateStatus, Task, TaskStatus
from synthesis import prompts
from synthesis.config import SynthContext
from synthesis.pools import PoolItem, load_pool, packaged_pool, sample
from synthesis.procedural.families import (
    FAMILIES,
    FAMILY_DOMAIN,
    FAMILY_SERVICES,
    generate,
)
from synthesis.stages.common import StageStats, Timer
from synthesis.store import add_candidate, count_candidates, ledger_get, ledger_put
from synthesis.tools import proposal_tools

log = logging.getLogger(__name__)


def pool_for(ctx: SynthContext) -> list[PoolItem]:
    items = load_pool(ctx.config.pool, domain=ctx.config.domain) if ctx.config.pool else packaged_pool(ctx.config.domain)
    return [i for i in items if i.domain == ctx.config.domain]


def live_selected(ctx: SynthContext, session: Session | None = None) -> int:
    """Selected candidates of the run whose task is not rejected (or not built yet)."""
    rejected = select(Task.candidate_id).where(Task.status == TaskStatus.rejected.value,
                                               Task.candidate_id.is_not(None))
    q = select(func.count()).select_from(Candidate).where(
        Candidate.run_id == ctx.run_id, Candidate.status == CandidateStatus.selected.value,
        Candidate.id.not_in(rejected))
    if session is not None:
        return int(session.execute(q).scalar_one())
    with session_scope(ctx.engine) as own:
        return int(own.execute(q).scalar_one())


def wanted_pending(ctx: SynthContext) -> int:
    need = ctx.config.n - live_selected(ctx)
    return 0 if need <= 0 else math.ceil(need * ctx.config.oversample)


def _procedural_seed(run_seed: int, i: int) -> int:
    return (run_seed * 1_000_003 + i * 7919) % (2**31)


def _propose_procedural(ctx: SynthContext, want: int, stats: StageStats) -> None:
    items = pool_for(ctx)
    by_family: dict[str, list[PoolItem]] = defaultdict(list)
    for item in items:
        for fam in item.families:
            if fam in FAMILIES and FAMILY_DOMAIN.get(fam, "claw") == ctx.config.domain:
                by_family[fam].append(item)
    families = sorted(by_family) or sorted(f for f in FAMILIES if FAMILY_DOMAIN.get(f, "claw") == ctx.config.domain)
    if ctx.config.families:
        wrong = [f for f in ctx.config.families if FAMILY_DOMAIN.get(f) != ctx.config.domain]
        if wrong:
            known = sorted(f for f in FAMILIES if FAMILY_DOMAIN.get(f, "claw") == ctx.config.domain)
            raise ValueError(f"synthesis families: {', '.join(wrong)} not {ctx.config.domain} families "
                             f"(known: {', '.join(known)})")
        families = list(ctx.config.families)
    limit = 50 * max(want, 1) + 100
    for i in range(limit):
        if count_candidates(ctx.engine, ctx.run_id, CandidateStatus.proposed) >= want:
            return
        fam = families[i % len(families)]
        seed = _procedural_seed(ctx.seed, i)
        spec = generate(fam, seed)
        grounding = by_family.get(fam) or []
        refs = [grounding[seed % len(grounding)].id] if grounding else []
        stats.attempts += 1
        cid = add_candidate(
            ctx.engine, run_id=ctx.run_id, domain=ctx.config.domain, instruction=spec.instruction,
            category=spec.category, proposer="procedural", purpose=ctx.config.purpose, asset_refs=refs,
            params={"family": fam, "seed": seed, "difficulty": spec.difficulty, "index": i, "services": spec.services},
        )
        if cid is not None:
            stats.count += 1


async def _propose_agent(ctx: SynthContext, want: int, stats: StageStats) -> None:
    assert ctx.runtime is not None
    items = pool_for(ctx)
    services = sorted({s for fam in FAMILY_SERVICES.values() for s in fam} | {s for i in items for s in i.services})
    per_call = ctx.config.proposals_per_call
    max_calls = 3 * math.ceil(want / per_call) + 2
    for j in range(max_calls):
        if count_candidates(ctx.engine, ctx.run_id, CandidateStatus.proposed) >= want:
            return
        key = f"propose:{j}"
        if ledger_get(ctx.engine, ctx.run_id, key) is not None:
            continue
        grounding = sample(items, 4, seed=ctx.seed + j)
        k = min(per_call, want - count_candidates(ctx.engine, ctx.run_id, CandidateStatus.proposed))
        added: list[int] = []
        tools = proposal_tools(ctx.engine, run_id=ctx.run_id, domain=ctx.config.domain, purpose=ctx.config.purpose,
                               proposer=ctx.runtime.name, services=services, asset_refs=[i.id for i in grounding],
                               added=added)
        prompt = prompts.PROPOSE.format(k=k, domain=ctx.config.domain, purpose=ctx.config.purpose,
                                        services=", ".join(services), items=prompts.render_items(grounding))
        workdir = ctx.work_dir / "propose" / f"call-{j}"
        result = await ctx.runtime.run(prompt, tools, workdir, ctx.config.propose_budget, system=prompts.SYSTEM)
        transcript = await asyncio.to_thread(result.save, ctx.work_dir / "transcripts" / f"propose-{j}.json")
        await asyncio.to_thread(ledger_put, ctx.engine, ctx.run_id, key, {
            "stage": "propose", "ok": result.ok, "transcript": transcript, "cost_usd": result.cost_usd, "seconds": round(result.seconds, 3),
            "turns": result.turns, "tool_calls": result.tool_calls, "added": added, "stop": result.stop_reason})
        if added:
            with session_scope(ctx.engine) as session:
                session.execute(update(Candidate).where(Candidate.id.in_(added)).values(
                    cost_usd=result.cost_usd / len(added), seconds=result.seconds / len(added)))
        stats.count += len(added)
        stats.attempts += 1
        stats.cost_usd += result.cost_usd
        if not result.ok:
            stats.notes.append(f"{key}: {result.error}")
            log.warning("propose call %s failed: %s", key, result.error)


async def propose(ctx: SynthContext) -> StageStats:
    """Append proposals until ``ceil(need * oversample)`` wait in status ``proposed``."""
    stats, timer = StageStats("propose"), Timer()
    want = await asyncio.to_thread(wanted_pending, ctx)
    if want > 0:
        if ctx.config.backend == "procedural":
            await asyncio.to_thread(_propose_procedural, ctx, want, stats)
        else:
            await _propose_agent(ctx, want, stats)
    stats.seconds = timer.seconds
    return stats
