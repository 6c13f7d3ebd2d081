"""The `openai` synthesis backend against the real local engine, through the recording proxy
(so the synthesis agent's transcript is recorded like any rollout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthesis.runtime.base import AgentTool, Budget
from synthesis.runtime.openai_loop import OpenAIAgent
from testkit.models import build_tiny_model, build_tiny_tokenizer


async def _noop_tool(arguments: dict) -> str:
    return "[]"


@pytest.fixture
def tiny_engine():
    from training.engines.local import LocalEngine

    tokenizer = build_tiny_tokenizer()
    engine = LocalEngine(model=build_tiny_model(len(tokenizer), max_len=4096), tokenizer=tokenizer, seed=0)
    yield engine
    engine.close()


async def test_openai_backend_runs_on_the_local_engine_and_is_recorded(tiny_engine, sqlite_url: str, tmp_path: Path) -> None:
    from storage.db import make_engine, session_scope
    from storage.models import ModelCall
    from training.proxy.server import ProxyServer

    async with ProxyServer(tiny_engine, db_url=sqlite_url) as proxy:
        admin = proxy.client()
        reg = await admin.register(task_id=None, harness="synthesis-openai", role="synthesis")
        agent = OpenAIAgent(base_url=reg.base_url, model="policy", api_key=reg.token, max_tokens=16, temperature=1.0)
        tool = AgentTool("list_proposals", "List the proposals so far.", {"type": "object", "properties": {}}, _noop_tool)
        result = await agent.run("Propose one claw task instruction.", [tool], tmp_path, Budget(max_turns=2, max_usd=None))
        calls = await admin.calls(reg.rollout_id)
        await admin.aclose()
    assert result.turns >= 1 and result.stop_reason in ("completed", "max_turns")
    assert result.cost_usd == 0.0  # self-hosted: no price configured
    assert len(calls) == result.turns
    assert all(c["prompt_token_ids"] and c["response_token_ids"] for c in calls)
    engine = make_engine(sqlite_url)
    with session_scope(engine) as s:
        assert s.query(ModelCall).filter_by(rollout_id=reg.rollout_id).count() == result.turns
    engine.dispose()
