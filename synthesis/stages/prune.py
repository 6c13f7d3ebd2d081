"""Prune: rank proposals by quality, drop near-duplicates, select the N best.

1. quality: the heuristic (free) or an LLM judge (one ledgered call per batch);
2. embeddings (stored on the candidate, so never computed twice);
3. one transaction (the run row locked): greedy dedup best-first against every selected
   candidate of the domain; near-duplicates become ``duplicate`` (dup_of, cosine in the
   reason), the best ``need`` are ``selected``, the rest ``discarded`` with their rank.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np
from sqlalchemy import select, update

from storage.claims import transition_candidate
from storage.db import session_scope
from storage.models import Candidate, CandidateStatus, Run
from synthesis import prompts
from synthesis.config import SynthContext
from synthesis.dedup import Embedder, greedy_dedup
from synthesis.quality import heuristic_quality
from synthesis.stages.common import StageStats, Timer
from synthesis.stages.propose import live_selected
from synthesis.store import ledger_get, ledger_put
from synthesis.tools import judge_tools

log = logging.getLogger(__name__)
JUDGE_BATCH = 10


def _pending(ctx: SynthContext) -> list[tuple[int, str, float | None, bool]]:
    with session_scope(ctx.engine) as session:
        rows = session.execute(
            select(Candidate.id, Candidate.instruction, Candidate.quality, Candidate.embedding.is_not(None))
            .where(Candidate.run_id == ctx.run_id, Candidate.status == CandidateStatus.proposed.value)
            .order_by(Candidate.id)
        ).all()
    return [(r[0], r[1], r[2], bool(r[3])) for r in rows]


def _set(ctx: SynthContext, values: dict[int, dict]) -> None:
    with session_scope(ctx.engine) as session:
        for cid, vals in values.items():
            session.execute(update(Candidate).where(Candidate.id == cid).values(**vals))


async def _judge(ctx: SynthContext, rows: list[tuple[int, str]], stats: StageStats) -> dict[int, float]:
    """LLM quality scores for ``rows``; batches already judged come from the ledger."""
    assert ctx.runtime is not None
    out: dict[int, float] = {}
    for start in range(0, len(rows), JUDGE_BATCH):
        batch = rows[start : start + JUDGE_BATCH]
        key = f"judge:{batch[0][0]}-{batch[-1][0]}"
        done = await asyncio.to_thread(ledger_get, ctx.engine, ctx.run_id, key)
        if done is None:
            scores: dict[str, float] = {}
            result = await ctx.runtime.run(prompts.JUDGE.format(candidates=prompts.render_candidates(batch)),
                                           judge_tools(scores), ctx.work_dir / "judge" / key.replace(":", "-"),
                                           ctx.config.judge_budget, system=prompts.SYSTEM)
            done = {"stage": "prune", "ok": result.ok, "cost_usd": result.cost_usd,
                    "seconds": round(result.seconds, 3), "scores": scores}
            await asyncio.to_thread(ledger_put, ctx.engine, ctx.run_id, key, done)
            stats.cost_usd += result.cost_usd
            stats.attempts += 1
        for cid, text in batch:  # unscored by the judge: fall back to the heuristic
            out[cid] = float(done["scores"].get(str(cid), heuristic_quality(text)))
    return out


def _select(ctx: SynthContext, tau: float, stats: StageStats) -> None:
    """The whole decision in one write transaction, so concurrent pruners never both select."""
    with session_scope(ctx.engine) as session:
        q = select(Run).where(Run.id == ctx.run_id)
        if ctx.engine.dialect.name == "postgresql":
            q = q.with_for_update()
        session.execute(q).scalar_one()  # SQLite: BEGIN IMMEDIATE already serializes writers
        cands = session.execute(
            select(Candidate.id, Candidate.quality, Candidate.embedding)
            .where(Candidate.run_id == ctx.run_id, Candidate.status == CandidateStatus.proposed.value,
                   Candidate.embedding.is_not(None))
        ).all()
        if not cands:
            return
        bank = session.execute(
            select(Candidate.id, Candidate.embedding)
            .where(Candidate.domain == ctx.config.domain, Candidate.status == CandidateStatus.selected.value,
                   Candidate.embedding.is_not(None)).order_by(Candidate.id)
        ).all()
        need = max(0, ctx.config.n - live_selected(ctx, session))
        order = sorted(range(len(cands)), key=lambda i: (-(cands[i][1] or 0.0), cands[i][0]))
        emb = np.asarray([c[2] for c in cands], dtype=np.float32)
        prior = np.asarray([b[1] for b in bank], dtype=np.float32) if bank else None
        res = greedy_dedup(emb, tau, order=order, already_kept=prior)
        for idx, (near, cos) in sorted(res.dropped.items()):
            dup_of = cands[near][0] if near >= 0 else bank[-1 - near][0]
            transition_candidate(session, cands[idx][0], CandidateStatus.duplicate, dup_of=dup_of,
                                 reason=f"near-duplicate of candidate {dup_of} (cosine {cos:.3f} >= tau {tau})")
        for rank, idx in enumerate(res.kept):
            if rank < need:
                transition_candidate(session, cands[idx][0], CandidateStatus.selected,
                                     reason=f"rank {rank + 1} by quality {cands[idx][1]:.3f}")
                stats.count += 1
            else:
                transition_candidate(session, cands[idx][0], CandidateStatus.discarded,
                                     reason=f"below the top-{need} cut (rank {rank + 1} of {len(res.kept)})")


async def prune(ctx: SynthContext) -> StageStats:
    stats, timer = StageStats("prune"), Timer()
    rows = await asyncio.to_thread(_pending, ctx)
    if rows:
        unscored = [(cid, text) for cid, text, q, _ in rows if q is None]
        if unscored:
            if ctx.config.quality_judge == "llm" and ctx.runtime is not None:
                scores = await _judge(ctx, unscored, stats)
            else:
                scores = {cid: heuristic_quality(text) for cid, text in unscored}
            await asyncio.to_thread(_set, ctx, {cid: {"quality": q} for cid, q in scores.items()})
        unembedded = [(cid, text) for cid, text, _, has in rows if not has]
        embedder = Embedder(ctx.config.embed_model)
        if unembedded:
            vecs = await asyncio.to_thread(embedder.encode, [t for _, t in unembedded])
            await asyncio.to_thread(_set, ctx, {cid: {"embedding": [round(float(x), 6) for x in v]}
                                                for (cid, _), v in zip(unembedded, vecs)})
        tau = ctx.config.tau if ctx.config.tau is not None else embedder.default_tau
        await asyncio.to_thread(_select, ctx, tau, stats)
    stats.seconds = timer.seconds
    return stats
