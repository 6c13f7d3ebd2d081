"""The proxy's count of the time its engine spent answering a rollout (engine_clock.py)."""

from __future__ import annotations

import asyncio

import httpx

from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.proxy.client import ProxyAdminClient, Registration
from training.proxy.engine_clock import EngineClock


def test_concurrent_calls_count_once() -> None:
    """The union of the calls' intervals, not their sum: parallel calls cannot stretch a
    deadline beyond the time that passed."""
    c = EngineClock()
    c.call_started()
    c.call_started()
    c.call_ended()
    assert c.in_flight == 1 and c.seconds() >= 0
    c.call_ended()
    done = c.seconds()
    assert c.in_flight == 0 and done == c.seconds()  # closed: no longer grows


async def test_engine_time_by_token_and_by_id(fake_vllm: FakeVLLM, admin: ProxyAdminClient,
                                              rollout: Registration) -> None:
    fake_vllm.script(*[FakeReply.text("ok", delay=0.4)] * 2)
    body = {"model": "fake-policy", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    url = rollout.base_url.rstrip("/")
    time_url = url[: -len("/v1")] + "/engine-time"
    async with httpx.AsyncClient(timeout=10, headers={"authorization": f"Bearer {rollout.token}"}) as http:
        before = (await http.get(time_url)).json()
        assert before["engine_seconds"] == 0.0 and before["in_flight"] == 0
        answers = await asyncio.gather(*(http.post(f"{url}/chat/completions", json=body) for _ in range(2)))
        assert all(a.status_code == 200 for a in answers)
        after = (await http.get(time_url)).json()
    # two 0.4 s answers side by side: ~0.4 s of engine time, not 0.8
    assert 0.35 <= after["engine_seconds"] < 0.75, after
    assert after["in_flight"] == 0
    assert abs(await admin.engine_seconds(rollout.rollout_id) - after["engine_seconds"]) < 1e-6
