"""The ``claude`` backend with the REAL Claude Code binary against a fake Messages API.

Claude Code (found by ``environments.harnesses.binaries.find_binary("claude")``) is pointed
with ANTHROPIC_BASE_URL at :class:`FakeAnthropic` on loopback, the only fake (a paid API).
The fake answers with the scripted task author, so the agent really calls our in-process
MCP tools: proposals land in the DB, builds write task dirs, checks run the oracle.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from environments.harnesses.binaries import find_binary
from storage.db import session_scope
from storage.models import Candidate, Check, Run, Task
from synthesis.config import SynthConfig
from synthesis.pipeline import synthesize
from synthesis.runtime.base import Budget
from synthesis.runtime.claude import MCP_SERVER, ClaudeAgent
from synthesis.store import count_candidates, start_or_resume_run
from synthesis.tools import proposal_tools
from tests.synthesis.checks import sandbox_checker
from tests.synthesis.fake_anthropic import FakeAnthropic, text_block, tool_block
from tests.synthesis.scripted_author import ScriptedAuthor

pytestmark = [pytest.mark.slow, pytest.mark.skipif(find_binary("claude") is None, reason="claude binary missing")]
PREFIX = f"mcp__{MCP_SERVER}__"


def _prompt_and_step(messages: list[dict[str, Any]]) -> tuple[str, int]:
    texts, step = [], 0
    for msg in messages:
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                step += 1
    return "\n".join(texts), step


def decider(author: ScriptedAuthor):  # noqa: ANN201
    def decide(body: dict[str, Any]) -> list[dict[str, Any]]:
        ours = [t["name"] for t in body.get("tools", []) if t.get("name", "").startswith(PREFIX)]
        if not ours:  # the CLI's side requests (titles, summaries, ...)
            return [text_block("ok")]
        prompt, step = _prompt_and_step(body["messages"])
        move = author.next_move(prompt, step)
        if move.tool:
            return [tool_block(PREFIX + move.tool, move.args)]
        return [text_block(move.text)]

    return decide


def _agent(fake: FakeAnthropic, home: Path) -> ClaudeAgent:
    state = home / "claude-state"
    state.mkdir(parents=True, exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake", "HOME": str(state),
           "CLAUDE_CONFIG_DIR": str(state / ".claude"), "XDG_CONFIG_HOME": str(state / ".config"),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
    return ClaudeAgent(model="opus", cli_path=find_binary("claude"), env=env)


@pytest.mark.timeout(600)
def test_budgets_turns_and_tool_wiring(db_engine, openforge_home: Path, tmp_path: Path) -> None:
    author = ScriptedAuthor()
    rid, _ = start_or_resume_run(db_engine, {"domain": "claw", "backend": "claude", "purpose": "rl"})
    added: list[int] = []
    tools = proposal_tools(db_engine, run_id=rid, domain="claw", purpose="rl", proposer="claude",
                           services=["gmail", "helpdesk", "contacts", "calendar", "notes"], asset_refs=["x"], added=added)
    prompt = "Propose 3 new, distinct tasks for the `claw` domain."
    with FakeAnthropic(decider(author)) as fake:
        agent = _agent(fake, openforge_home)
        full = asyncio.run(agent.run(prompt, tools, tmp_path / "a", Budget(max_usd=50.0, max_turns=20)))
        assert full.ok, full.error
        assert full.stop_reason == "completed" and full.final_text == "Appended 3 proposals."
        assert full.cost_usd > 0 and full.tool_calls == 4
        assert len(added) == 3 and count_candidates(db_engine, rid) == 3
        ours = [r for r in fake.requests if any(t["name"].startswith(PREFIX) for t in r.get("tools", []))]
        offered = {t["name"] for t in ours[0]["tools"]}
        assert offered == {PREFIX + "list_proposals", PREFIX + "append_proposal"}  # no built-in tools

        turns = asyncio.run(agent.run(prompt, tools, tmp_path / "b", Budget(max_usd=50.0, max_turns=2)))
        assert not turns.ok and turns.stop_reason == "max_turns"
        assert count_candidates(db_engine, rid) == 4  # list + one append, then stopped

        poor = asyncio.run(agent.run(prompt, tools, tmp_path / "c", Budget(max_usd=0.0001, max_turns=20)))
        assert not poor.ok and poor.stop_reason == "max_budget"
        assert count_candidates(db_engine, rid) <= 5


@pytest.mark.timeout(1500)
def test_claude_backend_runs_all_five_stages(db_engine, openforge_home: Path) -> None:
    author = ScriptedAuthor(break_first_build=True)
    with FakeAnthropic(decider(author)) as fake:
        config = SynthConfig(n=2, backend="claude", workers=1, oversample=1.5, quality_judge="llm",
                             proposals_per_call=3, max_refine=2)
        report = asyncio.run(synthesize(config, engine=db_engine, runtime=_agent(fake, openforge_home),
                                        checker=sandbox_checker()))
    assert report.status == "done" and report.tasks == {"verified": 2}, report
    assert author.stage_calls.get("build") == 2 and author.stage_calls.get("refine") == 1
    for stage in ("propose", "prune", "build", "test", "refine"):
        assert report.stages[stage].get("count", 0) >= 1, stage
    assert report.stages["propose"]["cost_usd"] > 0 and report.stages["build"]["cost_usd"] > 0
    with session_scope(db_engine) as s:
        cands = s.execute(select(Candidate)).scalars().all()
        tasks = s.execute(select(Task)).scalars().all()
        checks = s.execute(select(Check)).scalars().all()
        run = s.get(Run, report.run_id)
    assert len(cands) == 3 and all(c.proposer == "claude" and c.cost_usd > 0 for c in cands)
    assert sorted(c.status for c in cands) == ["discarded", "selected", "selected"]
    assert all(t.status == "verified" and t.cost_usd > 0 for t in tasks)
    assert sum(t.refine_iters for t in tasks) == 1
    agent_checks = [c for c in checks if c.kind in ("build_agent", "refine_agent")]
    assert len(agent_checks) == 3 and all(c.detail["cost_usd"] > 0 for c in agent_checks)
    assert abs(run.cost_usd - report.cost_usd) < 1e-9 and run.cost_usd > 0
    assert {k.split(":")[0] for k in run.summary["calls"]} == {"propose", "judge"}
    for t in tasks:
        assert (Path(t.dir) / "environment" / "fixtures").is_dir()
        assert (Path(t.dir) / "solution" / "solve.sh").read_text().count("call ") >= 1
