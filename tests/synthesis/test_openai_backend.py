"""The ``openai`` agent backend: our tool loop over an OpenAI-compatible endpoint.

The endpoint is the shared fake vLLM server (``testkit/fakes/vllm.py``, an external-boundary
fake) answering with the scripted task author; the synthesis run goes through all five
stages with agent-made proposals, LLM-judge quality, agent builds and one agent refine.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from storage.db import session_scope
from storage.models import Candidate, Check, Run, Task
from synthesis.config import SynthConfig
from synthesis.pipeline import synthesize
from synthesis.runtime.base import AgentTool, Budget
from synthesis.runtime.openai_loop import OpenAIAgent
from testkit.fakes.vllm import FakeReply, FakeVLLM
from tests.synthesis.checks import sandbox_checker
from tests.synthesis.scripted_author import ScriptedAuthor


def _responder(author: ScriptedAuthor):  # noqa: ANN202
    def respond(body: dict[str, Any]) -> FakeReply:
        msgs = body["messages"]
        prompt = next(m["content"] for m in msgs if m["role"] == "user")
        step = sum(1 for m in msgs if m["role"] == "tool")
        move = author.next_move(prompt, step)
        if move.tool:
            return FakeReply.tool(move.tool, move.args)
        return FakeReply.text(move.text)

    return respond


async def _echo_tool(args: dict[str, Any]) -> Any:
    return {"echo": args}


def test_tool_loop_runs_tools_counts_cost_and_stops_at_max_turns(tmp_path: Path) -> None:
    with FakeVLLM() as fake:
        fake.script(FakeReply.tool("echo", {"x": 1}), FakeReply.tool("nope", {}), FakeReply.text("done"))
        agent = OpenAIAgent(base_url=fake.base_url, model="fake-policy", usd_per_mtok_in=1000.0)
        tool = AgentTool("echo", "Echo.", {"type": "object", "properties": {"x": {"type": "integer"}}}, _echo_tool)
        res = asyncio.run(agent.run("go", [tool], tmp_path, Budget(max_usd=None, max_turns=5)))
        assert res.ok and res.final_text == "done" and res.turns == 3 and res.tool_calls == 2
        tool_msgs = [m for m in res.transcript if m["role"] == "tool"]
        assert json.loads(tool_msgs[0]["content"]) == {"echo": {"x": 1}}
        assert tool_msgs[1]["content"].startswith("error: unknown tool 'nope'")
        assert res.cost_usd > 0  # prompt tokens x $1000/M
        sent = fake.requests[0]
        assert sent["tools"][0]["function"]["name"] == "echo"

        fake.responder = lambda body: FakeReply.tool("echo", {"x": 2})
        capped = asyncio.run(agent.run("loop", [tool], tmp_path, Budget(max_usd=None, max_turns=2)))
        assert not capped.ok and capped.stop_reason == "max_turns" and capped.turns == 2
        broke = asyncio.run(agent.run("loop", [tool], tmp_path, Budget(max_usd=1e-9, max_turns=50)))
        assert broke.stop_reason == "max_budget" and broke.turns == 1


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_openai_backend_runs_all_five_stages(db_engine, openforge_home: Path) -> None:
    author = ScriptedAuthor(break_first_build=True)
    with FakeVLLM(responder=_responder(author)) as fake:
        agent = OpenAIAgent(base_url=fake.base_url, model="fake-policy", usd_per_mtok_in=2.0, usd_per_mtok_out=8.0)
        config = SynthConfig(n=2, backend="openai", workers=1, oversample=1.5, quality_judge="llm",
                             proposals_per_call=3, max_refine=2)
        report = asyncio.run(synthesize(config, engine=db_engine, runtime=agent, checker=sandbox_checker()))
    assert report.status == "done" and report.tasks == {"verified": 2}
    assert author.stage_calls.get("build") == 2 and author.stage_calls.get("refine") == 1
    for stage in ("propose", "prune", "build", "test", "refine"):
        assert report.stages[stage].get("count", 0) >= 1, stage
    assert report.stages["propose"]["cost_usd"] > 0 and report.cost_usd > 0
    with session_scope(db_engine) as s:
        cands = s.execute(select(Candidate)).scalars().all()
        tasks = s.execute(select(Task)).scalars().all()
        checks = s.execute(select(Check)).scalars().all()
        run = s.get(Run, report.run_id)
    assert all(c.proposer == "openai" for c in cands) and len(cands) == 3
    assert {c.status for c in cands} == {"selected", "discarded"}
    assert all(c.quality is not None and c.embedding for c in cands)
    assert sum(t.refine_iters for t in tasks) == 1 and all(t.cost_usd > 0 for t in tasks)
    kinds = [c.kind for c in checks]
    assert kinds.count("build_agent") == 2 and kinds.count("refine_agent") == 1
    assert any(c.kind == "oracle" and not c.passed for c in checks)  # the broken first build
    assert sorted(k.split(":")[0] for k in run.summary["calls"]) == ["judge", "propose"]
