"""Rollout lifecycle, token scoping, durability across a restart, bad input and engine errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from environments.runner.finish import FINISH_KEY_HEADER
from storage.db import make_engine, session_scope
from storage.models import Rollout
from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.client import ProxyAdminClient, ProxyClientError, Registration
from training.proxy.recorder import token_sha256
from training.proxy.server import ProxyServer


async def test_register_creates_the_rollout_row(admin: ProxyAdminClient, rollout: Registration, sqlite_url: str) -> None:
    assert rollout.base_url.endswith(f"/rollouts/{rollout.token}/v1")
    engine = make_engine(sqlite_url)
    with session_scope(engine) as s:
        row = s.get(Rollout, rollout.rollout_id)
        assert row is not None
        assert (row.task_id, row.group_id, row.run_id, row.role, row.harness) == ("task-1", "g1", "r1", "train", "test")
        assert row.token_sha256 == token_sha256(rollout.token)
        assert row.status == "running"
    engine.dispose()
    live = await admin.live()
    assert [r["rollout_id"] for r in live] == [rollout.rollout_id]


async def test_admin_routes_need_the_admin_key(proxy: ProxyServer, rollout: Registration) -> None:
    async with httpx.AsyncClient(base_url=proxy.url) as http:
        assert (await http.post("/admin/rollouts", json={})).status_code == 401
        r = await http.get(f"/admin/rollouts/{rollout.rollout_id}", headers={"authorization": f"Bearer {rollout.token}"})
        assert r.status_code == 401
        assert (await http.get("/healthz")).json()["ok"] is True


async def test_unknown_token_gets_401_in_each_api_format(proxy: ProxyServer) -> None:
    oa = openai.AsyncOpenAI(base_url=f"{proxy.url}/rollouts/nope/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as exc:
        await oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert "unknown rollout token" in str(exc.value)
    an = anthropic.AsyncAnthropic(base_url=f"{proxy.url}/rollouts/nope", api_key="x", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as aexc:
        await an.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert aexc.value.body["error"]["type"] == "authentication_error"


async def test_token_reaches_only_its_own_rollout(admin: ProxyAdminClient, rollout: Registration) -> None:
    other = await admin.register(task_id="task-2")
    client = openai.AsyncOpenAI(base_url=other.base_url, api_key="x", max_retries=0)
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "mine"}])
    assert len(await admin.calls(other.rollout_id)) == 1
    assert await admin.calls(rollout.rollout_id) == []


async def test_finish_records_outcome_and_refuses_the_token(admin: ProxyAdminClient, rollout: Registration,
                                                            proxy: ProxyServer) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="x", max_retries=0)
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    async with httpx.AsyncClient() as http:
        finish_url = rollout.base_url.removesuffix("/v1") + "/finish"
        key = {FINISH_KEY_HEADER: rollout.finish_key}
        r = await http.post(finish_url, json={"reward": 0.75, "status": "ok", "logs": "runner says hi"}, headers=key)
        assert r.status_code == 200, r.text
        got = r.json()
        assert (got["status"], got["reward"], got["n_calls"], got["live"]) == ("ok", 0.75, 1, False)
        assert Path(got["logs_path"]).read_text() == "runner says hi"
        again = await http.post(finish_url, json={"reward": 1.0, "status": "ok"}, headers=key)
        assert again.status_code == 403
    with pytest.raises(openai.PermissionDeniedError) as exc:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "late"}])
    assert "finished" in str(exc.value)
    assert len(await admin.calls(rollout.rollout_id)) == 1
    assert await admin.live() == []


async def test_finish_rejects_bad_status(admin: ProxyAdminClient, rollout: Registration) -> None:
    with pytest.raises(ProxyClientError) as exc:
        await admin.finish(rollout.rollout_id, status="great")
    assert exc.value.status == 400 and "status must be one of" in str(exc.value)


async def test_acknowledged_calls_survive_a_restart(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    engine = OpenAICompatEngine(fake_vllm.base_url)
    async with ProxyServer(engine, db_url=sqlite_url) as first:
        async with first.client() as admin:
            reg = await admin.register(task_id="t")
        client = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        for i in range(3):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{i}"}])
    # A new proxy process on the same DB: the same token still works and indexes continue.
    async with ProxyServer(engine, db_url=sqlite_url) as second:
        base = reg.base_url.replace(first.url, second.url)
        client = openai.AsyncOpenAI(base_url=base, api_key="x", max_retries=0)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q3"}])
        async with second.client() as admin:
            calls = await admin.calls(reg.rollout_id)
            assert [c["index"] for c in calls] == [0, 1, 2, 3]
            assert [c["request"]["messages"][0]["content"] for c in calls] == ["q0", "q1", "q2", "q3"]
            assert (await admin.get(reg.rollout_id))["n_calls"] == 4
    await engine.aclose()


async def test_engine_error_is_recorded_and_marks_infra_error(fake_vllm: FakeVLLM, admin: ProxyAdminClient,
                                                              rollout: Registration) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="x", max_retries=0)
    fake_vllm.script(FakeReply.failure(500, "GPU on fire"))
    with pytest.raises(openai.APIStatusError) as exc:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    assert exc.value.status_code == 502 and "GPU on fire" in str(exc.value)
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "retry"}])
    calls = await admin.calls(rollout.rollout_id)
    assert [c["status"] for c in calls] == ["error", "ok"]
    assert calls[0]["response"] is None and calls[0]["prompt_token_ids"] is None
    row = await admin.get(rollout.rollout_id)
    assert (row["status"], row["error_kind"]) == ("infra_error", "engine_error")
    done = await admin.finish(rollout.rollout_id, status="ok", reward=1.0)
    assert (done["status"], done["error_kind"]) == ("infra_error", "engine_error")  # sticky
    assert done["metadata"]["reported_status"] == "ok"


async def test_engine_timeout_and_unreachable_are_infra_errors(sqlite_url: str, fake_vllm: FakeVLLM) -> None:
    fake_vllm.script(FakeReply.text("slow", delay=3.0))
    slow = OpenAICompatEngine(fake_vllm.base_url, model=fake_vllm.model, timeout=0.5)
    async with ProxyServer(slow, db_url=sqlite_url) as server, server.client() as admin:
        reg = await admin.register()
        client = anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as exc:
            await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        assert exc.value.status_code == 504 and exc.value.body["error"]["type"] == "api_error"
        assert "timed out" in exc.value.body["error"]["message"]
        assert (await admin.get(reg.rollout_id))["status"] == "infra_error"
    dead = OpenAICompatEngine("http://127.0.0.1:9/v1", model="m", timeout=2.0)
    async with ProxyServer(dead, db_url=sqlite_url) as server, server.client() as admin:
        reg = await admin.register()
        client = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.APIStatusError) as oexc:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert oexc.value.status_code == 502 and "unreachable" in str(oexc.value)
        assert (await admin.calls(reg.rollout_id))[0]["status"] == "error"


async def test_bad_input_answers_in_the_callers_format(proxy: ProxyServer, rollout: Registration,
                                                       admin: ProxyAdminClient) -> None:
    async with httpx.AsyncClient(base_url=rollout.base_url) as http:
        r = await http.post("/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]["message"]
        r = await http.post("/messages", content=b"[1, 2]")
        assert r.status_code == 400 and r.json()["type"] == "error"
        assert r.json()["error"]["type"] == "invalid_request_error"
        r = await http.post("/messages", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
        r = await http.post("/chat/completions", json={"model": "m", "n": 3, "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_parameter"
        r = await http.post("/responses", json={"model": "m", "input": "x", "previous_response_id": "resp_1"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "previous_response_id"
        r = await http.post("/chat/completions", content=b"x" * (33 * 1024 * 1024))
        assert r.status_code == 413
    assert await admin.calls(rollout.rollout_id) == []  # nothing half-recorded


async def test_too_many_calls_are_refused(fake_vllm: FakeVLLM, admin: ProxyAdminClient, rollout: Registration) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="x", max_retries=0)
    for _ in range(20):  # the fixture's limit
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    with pytest.raises(openai.BadRequestError) as exc:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    assert exc.value.code == "too_many_calls"
    assert len(await admin.calls(rollout.rollout_id)) == 20


async def test_unknown_model_refused_when_models_are_pinned(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    engine = OpenAICompatEngine(fake_vllm.base_url)
    async with ProxyServer(engine, db_url=sqlite_url, served_models=["policy"]) as server, server.client() as admin:
        reg = await admin.register()
        client = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.NotFoundError) as exc:
            await client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])
        assert exc.value.code == "model_not_found"
        ok = await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "x"}])
        assert ok.choices[0].message.content == "echo: x"
    await engine.aclose()


async def test_engine_4xx_is_passed_back_and_not_an_infra_error(fake_vllm: FakeVLLM, admin: ProxyAdminClient,
                                                                rollout: Registration) -> None:
    fake_vllm.script(FakeReply.failure(400, "maximum context length is 32768 tokens"))
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as exc:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert "maximum context length" in str(exc.value)
    assert (await admin.get(rollout.rollout_id))["status"] == "running"
    assert (await admin.calls(rollout.rollout_id))[0]["status"] == "error"


async def test_concurrent_calls_get_contiguous_indexes(fake_vllm: FakeVLLM, admin: ProxyAdminClient) -> None:
    regs = [await admin.register(task_id=f"t{i}") for i in range(4)]
    clients = [openai.AsyncOpenAI(base_url=r.base_url, api_key="x", max_retries=0) for r in regs]

    async def one(client: openai.AsyncOpenAI, i: int) -> str:
        out = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"m{i}"}])
        return out.choices[0].message.content

    answers = await asyncio.gather(*(one(clients[i % 4], i) for i in range(40)))
    assert sorted(answers) == sorted(f"echo: m{i}" for i in range(40))
    for reg in regs:
        calls = await admin.calls(reg.rollout_id)
        assert [c["index"] for c in calls] == list(range(10))
        assert (await admin.get(reg.rollout_id))["n_calls"] == 10


async def test_max_tokens_cap_clamps_requests(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    engine = OpenAICompatEngine(fake_vllm.base_url)
    async with ProxyServer(engine, db_url=sqlite_url, max_tokens_cap=512) as server, server.client() as admin:
        reg = await admin.register()
        client = anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0)
        await client.messages.create(model="m", max_tokens=16000, messages=[{"role": "user", "content": "x"}])
        assert fake_vllm.requests[-1]["max_tokens"] == 512
    await engine.aclose()
