"""Slow: the oracle teacher drives the REAL mini-swe-agent binary (one ``bash`` tool, claw tools
as SKILL.md shell calls) on a contact-lookup task through the recording proxy, the local
sandbox and the task's verifier: the skill CLI call is made, mini's submission reaches
``<logs>/agent/final_answer.txt``, the verifier gives 1.0 and distillation keeps the
trajectory as SFT examples. Skipped when scripts/install-harnesses.sh has not installed mini."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from environments.harnesses.binaries import find_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.mark.skipif(find_binary("mini") is None, reason="mini-swe-agent not installed (scripts/install-harnesses.sh)")
def test_oracle_teacher_through_real_mini_swe_agent_scores_1(tmp_path: Path) -> None:
    from environments.records import RolloutResult
    from openforge.presets import load_preset
    from synthesis.procedural.render import write_generated
    from training.trajectory.sft import read_sft_parquet
    from training.workflows.distill import distill

    tasks = write_generated(tmp_path / "tasks", "contact-lookup", range(10_000, 10_002))
    preset = load_preset("local", {"rollout.harness": "mini-swe-agent", "rollout.concurrency": 2})
    seen: list[RolloutResult] = []
    report = asyncio.run(distill(preset, tasks, teacher="oracle", run_id="mini-oracle", progress=seen.append))
    assert len(seen) == 2, report
    for r in seen:
        assert r.status.value == "ok" and r.reward == 1.0, r
    assert report.kept_trajectories == 2 and report.examples >= 2, report
    examples = read_sft_parquet(report.parquet)  # the recorded token ids, trained on the oracle's replies
    assert len(examples) == report.examples and all(sum(e.loss_mask) > 0 for e in examples)
    records = [json.loads(line) for line in Path(report.jsonl).read_text().splitlines()]
    calls = [tc["function"] for rec in records for m in rec["messages"] for tc in m.get("tool_calls") or []]
    assert {c["name"] for c in calls} == {"bash"}
    commands = [json.loads(c["arguments"])["command"] if isinstance(c["arguments"], str) else c["arguments"]["command"]
                for c in calls]
    assert any(cmd.startswith("claw-call contacts_search ") for cmd in commands), commands
    assert any(cmd.startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && printf") for cmd in commands), commands


@pytest.mark.skipif(find_binary("mini") is None, reason="mini-swe-agent not installed (scripts/install-harnesses.sh)")
def test_real_mini_swe_agent_stops_soon_after_its_generation_budget_is_spent(tmp_path: Path) -> None:
    """The proxy refuses calls past ``rollout.max_total_tokens`` (HTTP 400, rollout_budget_exhausted).
    mini retries refused calls 10 times over ~6 min by default; the adapter gives it 2 attempts,
    so the rollout ends within seconds and the verifier scores what the agent did (the search)."""
    import time

    from environments.records import RolloutResult
    from openforge.presets import load_preset
    from synthesis.procedural.render import write_generated
    from training.workflows.distill import distill

    tasks = write_generated(tmp_path / "tasks", "contact-lookup", range(10_000, 10_001))
    # the oracle's first call (the search, ~40 tokens) fits; the budget is then spent
    preset = load_preset("local", {"rollout.harness": "mini-swe-agent", "rollout.max_total_tokens": 40})
    seen: list[RolloutResult] = []
    t0 = time.perf_counter()
    asyncio.run(distill(preset, tasks, teacher="oracle", run_id="mini-budget", progress=seen.append))
    seconds = time.perf_counter() - t0
    assert len(seen) == 1 and seen[0].status.value == "ok", seen
    assert 0.0 < (seen[0].reward or 0.0) < 1.0, seen  # searched, never submitted the answer
    assert seconds < 120, f"{seconds:.0f} s: mini kept retrying the refused calls"
