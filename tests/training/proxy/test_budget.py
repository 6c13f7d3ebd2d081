"""The generation budget at the proxy: every call's max_tokens is set within the per-call cap
and what is left of the rollout's cap; a spent budget refuses the next call in each API's format."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.budget import (
    BUDGET_EXHAUSTED,
    BudgetExhausted,
    BudgetLedger,
    GenerationBudget,
)
from training.proxy.client import ProxyAdminClient
from training.proxy.server import ProxyServer

LONG = "x" * 200  # the fake engine spends one token per byte, so every grant is used in full


def test_ledger_grants_the_smallest_bound_and_refuses_once_spent() -> None:
    ledger = BudgetLedger(GenerationBudget(max_tokens=5, max_total_tokens=12))
    assert ledger.reserve(None) == 5  # nothing asked: the per-call cap
    assert ledger.reserve(100) == 5  # more asked: clamped
    assert ledger.reserve(1) == 1  # less asked: kept
    assert ledger.reserve(None) == 1  # what is left after the reservations in flight
    for grant in (5, 5, 1, 1):
        ledger.settle(grant, grant)
    assert ledger.left == 0
    with pytest.raises(BudgetExhausted, match=BUDGET_EXHAUSTED):
        ledger.reserve(None)


def test_unbounded_ledger_passes_requests_through() -> None:
    ledger = BudgetLedger(GenerationBudget())
    assert ledger.reserve(None) is None
    assert ledger.reserve(7) == 7


@pytest.mark.parametrize("bad", [{"max_tokens": 0}, {"max_total_tokens": "9"}, {"max_tokens": True}])
def test_budget_rejects_non_positive_integers(bad: dict) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        GenerationBudget.from_mapping(bad)


async def test_per_call_cap_applies_whatever_the_request_asks(fake_vllm: FakeVLLM, admin: ProxyAdminClient) -> None:
    reg = await admin.register(budget=GenerationBudget(max_tokens=5))
    oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    await oa.chat.completions.create(model="m", messages=msgs)
    await oa.chat.completions.create(model="m", messages=msgs, max_tokens=100)
    await oa.chat.completions.create(model="m", messages=msgs, max_completion_tokens=100)
    await oa.chat.completions.create(model="m", messages=msgs, max_tokens=3)
    await oa.responses.create(model="m", input="hi")
    an = anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0)
    await an.messages.create(model="m", max_tokens=16000, messages=msgs)
    sent = fake_vllm.requests
    assert [r.get("max_tokens") for r in sent] == [5, 5, 5, 3, 5, 5]
    assert all("max_completion_tokens" not in r for r in sent)
    assert (await admin.get(reg.rollout_id))["metadata"]["budget"] == {"max_tokens": 5}


async def test_spent_rollout_budget_refuses_in_each_api_format(fake_vllm: FakeVLLM, admin: ProxyAdminClient) -> None:
    fake_vllm.script(*[FakeReply.text(LONG)] * 3)
    reg = await admin.register(budget=GenerationBudget(max_tokens=8, max_total_tokens=20))
    msgs = [{"role": "user", "content": "hi"}]
    oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
    for _ in range(3):  # 8 + 8 + 4 generated: the last grant is what was left
        await oa.chat.completions.create(model="m", messages=msgs)
    assert [r["max_tokens"] for r in fake_vllm.requests] == [8, 8, 4]

    with pytest.raises(openai.BadRequestError) as chat_err:
        await oa.chat.completions.create(model="m", messages=msgs)
    assert chat_err.value.code == BUDGET_EXHAUSTED
    with pytest.raises(openai.BadRequestError) as resp_err:
        await oa.responses.create(model="m", input="hi")
    assert resp_err.value.body["code"] == BUDGET_EXHAUSTED
    an = anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as msg_err:
        await an.messages.create(model="m", max_tokens=5, messages=msgs)
    assert msg_err.value.body == {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": msg_err.value.body["error"]["message"]}}
    assert BUDGET_EXHAUSTED in msg_err.value.body["error"]["message"]
    assert len(fake_vllm.requests) == 3  # refused calls never reach the engine

    calls = await admin.calls(reg.rollout_id)
    assert [c["status"] for c in calls] == ["ok"] * 3 + ["error"] * 3
    assert [c["api"] for c in calls[3:]] == ["chat", "responses", "messages"]
    assert all(BUDGET_EXHAUSTED in c["error"] for c in calls[3:])
    assert (await admin.get(reg.rollout_id))["n_calls"] == 6


async def test_proxy_default_budget_applies_to_registrations_without_one(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    fake_vllm.script(FakeReply.text(LONG))
    engine = OpenAICompatEngine(fake_vllm.base_url, timeout=5.0)
    async with ProxyServer(engine, db_url=sqlite_url, max_tokens_cap=6, max_total_tokens=6) as server, \
            server.client() as admin:
        reg = await admin.register()
        oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        await oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert fake_vllm.requests[-1]["max_tokens"] == 6
        with pytest.raises(openai.BadRequestError, match=BUDGET_EXHAUSTED):
            await oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
        # a registration's own caps win over the proxy's defaults
        wide = await admin.register(budget=GenerationBudget(max_tokens=9, max_total_tokens=100))
        oa2 = openai.AsyncOpenAI(base_url=wide.base_url, api_key="x", max_retries=0)
        await oa2.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert fake_vllm.requests[-1]["max_tokens"] == 9
    await engine.aclose()


async def test_spent_budget_survives_a_proxy_restart(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    fake_vllm.script(FakeReply.text(LONG))
    engine = OpenAICompatEngine(fake_vllm.base_url, timeout=5.0)
    async with ProxyServer(engine, db_url=sqlite_url) as first, first.client() as admin:
        reg = await admin.register(budget=GenerationBudget(max_total_tokens=7))
        oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        await oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    async with ProxyServer(engine, db_url=sqlite_url) as second:
        url = reg.base_url.replace(first.url, second.url)
        oa = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match=BUDGET_EXHAUSTED):
            await oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    await engine.aclose()


async def test_registration_with_a_bad_budget_is_refused(proxy: ProxyServer) -> None:
    async with httpx.AsyncClient(base_url=proxy.url, headers={"authorization": f"Bearer {proxy.admin_key}"}) as http:
        r = await http.post("/admin/rollouts", json={"budget": {"max_total_tokens": -1}})
        assert r.status_code == 400
        assert r.json()["error"]["param"] == "budget"
