"""Slow: a third-party harness binary (mini-swe-agent, the cheapest: one bash tool, a short
system prompt) runs a claw example end to end on the embedded default — the local engine
(SmolLM2-135M, CPU) behind the recording proxy, a local sandbox and the task's verifier —
within a small generation budget. The 135M policy writes junk; any reward is fine, but the
rollout must end ``ok``/``policy_error`` with its calls recorded and held within the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.harnesses.binaries import find_binary
from storage.calls import expand_calls
from storage.db import make_engine, session_scope
from storage.models import ModelCall
from training.orchestrator.single import rollout_once
from training.proxy.budget import GenerationBudget

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EXAMPLE = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples" / "claw-kb-answer-ticket"


@pytest.mark.skipif(find_binary("mini") is None, reason="mini-swe-agent not installed (scripts/install-harnesses.sh)")
async def test_mini_swe_agent_rollout_on_the_local_engine_within_its_budget(sqlite_url: str) -> None:
    budget = GenerationBudget(max_tokens=48, max_total_tokens=96)
    doc = await rollout_once(str(EXAMPLE), "mini-swe-agent", engine="local", timeout=800, db_url=sqlite_url,
                             harness_options={"step_limit": 4}, budget=budget)
    assert doc["status"] in ("ok", "policy_error"), doc
    assert doc["reward"] is not None and doc["n_calls"] >= 1, doc
    db = make_engine(sqlite_url)
    try:
        with session_scope(db) as s:
            # rows may be stored against an earlier call (linear storage): read them as every reader does
            calls = expand_calls(s.query(ModelCall).filter(ModelCall.rollout_id == doc["rollout_id"]).all())
            answered = [c for c in calls if c["status"] == "ok"]
            assert answered, "at least one call reached the engine"
            assert all(c["request"]["max_tokens"] <= 48 for c in answered)  # mini sends none: the proxy set it
            assert sum(len(c["response_token_ids"] or []) for c in answered) <= 96
            assert all("rollout_budget_exhausted" in (c["error"] or "") for c in calls if c["status"] != "ok")
    finally:
        db.dispose()
