"""The proxy in front of the in-process LocalEngine (a tiny random Llama): SDK calls work and
every call is recorded with the engine's own token ids and logprobs."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from training.proxy.server import ProxyServer

pytestmark = pytest.mark.slow


@pytest.fixture
def tiny_local_engine(tmp_path: Path):
    pytest.importorskip("transformers")
    from testkit.models import build_tiny_model, build_tiny_tokenizer
    from training.engines.local import LocalEngine

    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(len(tokenizer))
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    engine = LocalEngine(str(tmp_path / "tiny"), max_batch_size=4, seed=0)
    yield engine, tokenizer


async def test_sdks_through_proxy_to_local_engine(tiny_local_engine, sqlite_url: str) -> None:
    engine, tokenizer = tiny_local_engine
    async with ProxyServer(engine, db_url=sqlite_url) as server, server.client() as admin:
        reg = await admin.register(task_id="local", harness="sdk")
        oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        chat = await oa.chat.completions.create(model="policy", max_tokens=8,
                                                messages=[{"role": "user", "content": "hello world"}])
        assert chat.choices[0].finish_reason in ("stop", "length")
        resp = await oa.responses.create(model="policy", input="the answer is", max_output_tokens=8)
        assert resp.status in ("completed", "incomplete")
        an = anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0)
        async with an.messages.stream(model="policy", max_tokens=8,
                                      messages=[{"role": "user", "content": "quick brown fox"}]) as stream:
            msg = await stream.get_final_message()
        assert msg.stop_reason in ("end_turn", "max_tokens")
        calls = await admin.calls(reg.rollout_id)
    assert [c["api"] for c in calls] == ["chat", "responses", "messages"]
    for c in calls:
        assert c["status"] == "ok" and c["prompt_token_ids"] and c["response_token_ids"]
        assert len(c["response_logprobs"]) == len(c["response_token_ids"]) <= 8
        assert all(lp <= 0 for lp in c["response_logprobs"])
    # The recorded ids are the engine's: the chat answer decodes from them.
    assert tokenizer.decode(calls[0]["response_token_ids"], skip_special_tokens=True) == chat.choices[0].message.content
    assert "hello world" in tokenizer.decode(calls[0]["prompt_token_ids"])
    await engine.aclose()
