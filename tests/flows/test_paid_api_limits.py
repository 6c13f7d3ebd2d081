"""Paid-API limits on a fresh Prefect home: created idempotently by ``ensure_paid_api_limits``,
acquired with ``strict=True`` per model call (not per run), concurrency bounded by the slots
and call starts by the rate limit."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flows.limits import ensure_paid_api_limits, specs
from synthesis.runtime.base import AgentTool, Budget
from synthesis.runtime.factory import make_runtime
from synthesis.runtime.openai_loop import OpenAIAgent
from tasks.paid_api import (
    PAID_API_LIMITS,
    PaidApiLimit,
    gate_for_backend,
    prefect_call_gate,
)
from testkit.fakes.vllm import FakeReply, FakeVLLM

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _limit(slots: int, per_second: float, burst: int) -> PaidApiLimit:
    return PaidApiLimit(f"test-api-{uuid.uuid4().hex[:8]}", slots=slots, calls_per_second=per_second, burst=burst)


class CountingClient:
    """Stands in for the paid API's SDK client: each request takes ``seconds``; counts how many
    are in flight at once. The first request of a run asks for a tool, the second ends it."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.in_flight, self.max_in_flight, self.requests = seconds, 0, 0, 0
        self.starts: list[float] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **kwargs: Any) -> Any:
        self.in_flight += 1
        self.requests += 1
        self.starts.append(time.monotonic())
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.in_flight -= 1
        first = not any(m["role"] == "tool" for m in kwargs["messages"])
        call = SimpleNamespace(id="c1", function=SimpleNamespace(name="wait", arguments="{}"))
        message = SimpleNamespace(content="" if first else "done", tool_calls=[call] if first else None)
        return SimpleNamespace(usage=None, choices=[SimpleNamespace(message=message)])


def test_default_limits_are_created_once_then_kept_and_repaired() -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    names = {s.name for s in specs(PAID_API_LIMITS.values())}
    assert names == {"anthropic-api", "anthropic-api-rate", "openai-api", "openai-api-rate"}
    first = ensure_paid_api_limits()
    assert {s.name for s in first} == names and {s.action for s in first} <= {"created", "kept"}
    assert all(s.action == "kept" for s in ensure_paid_api_limits())  # idempotent
    with get_client(sync_client=True) as client:
        for spec in specs(PAID_API_LIMITS.values()):
            held = client.read_global_concurrency_limit_by_name(spec.name)
            assert (held.limit, held.slot_decay_per_second) == (spec.limit, spec.slot_decay_per_second)
        # an operator's tuning is kept; a rate limit that no longer decays is repaired
        client.update_global_concurrency_limit("openai-api", GlobalConcurrencyLimitUpdate(limit=3))
        client.update_global_concurrency_limit("openai-api-rate", GlobalConcurrencyLimitUpdate(slot_decay_per_second=0))
        by_name = {s.name: s for s in ensure_paid_api_limits()}
        assert by_name["openai-api"].action == "kept" and by_name["openai-api"].limit == 3
        assert by_name["openai-api-rate"].action == "updated"
        assert client.read_global_concurrency_limit_by_name("openai-api-rate").slot_decay_per_second == 4.0
        assert {s.action for s in ensure_paid_api_limits(overwrite=True)} == {"kept", "updated"}
        assert client.read_global_concurrency_limit_by_name("openai-api").limit == PAID_API_LIMITS["openai"].slots


async def test_strict_gate_fails_without_the_limits_and_passes_after_ensure() -> None:
    from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError

    limit = _limit(slots=2, per_second=50.0, burst=10)
    with pytest.raises(ConcurrencySlotAcquisitionError):
        async with prefect_call_gate(limit)():
            pass
    assert [s.action for s in ensure_paid_api_limits([limit])] == ["created", "created"]
    async with prefect_call_gate(limit)():
        pass


async def test_openai_synthesis_runtime_calls_through_the_strict_limits(tmp_path: Path) -> None:
    ensure_paid_api_limits()
    assert gate_for_backend("procedural") is None
    with FakeVLLM() as fake:
        fake.script(FakeReply.text("proposal"))
        runtime = make_runtime("openai", base_url=fake.base_url, model="fake-policy", gate=gate_for_backend("openai"))
        result = await runtime.run("propose one task", [], tmp_path, Budget(max_usd=None, max_turns=2))
    assert result.ok and result.final_text == "proposal", result.error


async def test_concurrent_calls_never_exceed_the_slots_and_are_gated_per_call(tmp_path: Path) -> None:
    limit = _limit(slots=2, per_second=100.0, burst=100)
    ensure_paid_api_limits([limit])
    client = CountingClient(seconds=0.3)
    active = {"now": 0, "max": 0}

    async def wait(_args: dict[str, Any]) -> str:  # the agent's tool: no model call
        await asyncio.sleep(0.6)
        return "ok"

    async def one_run(i: int) -> bool:
        agent = OpenAIAgent(base_url="http://unused", model="m", client=client, gate=prefect_call_gate(limit))
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        try:
            res = await agent.run(f"run {i}", [AgentTool("wait", "Wait.", {"type": "object"}, wait)], tmp_path,
                                  Budget(max_usd=None, max_turns=4, timeout_s=120))
        finally:
            active["now"] -= 1
        return res.ok

    assert all(await asyncio.gather(*(one_run(i) for i in range(6))))
    assert client.requests == 12
    assert client.max_in_flight == limit.slots  # bounded, and the bound is reached
    assert active["max"] > limit.slots  # slots are freed between a run's calls: gated per call, not per run


async def test_rate_limit_spaces_call_starts(tmp_path: Path) -> None:
    limit = _limit(slots=10, per_second=4.0, burst=2)
    ensure_paid_api_limits([limit])
    client = CountingClient(seconds=0.0)
    gate = prefect_call_gate(limit)

    async def call() -> None:
        async with gate():
            await client.create(messages=[{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}])

    start = time.monotonic()
    await asyncio.gather(*(call() for _ in range(6)))
    # 2 at once (the burst), then 4 more at 4 per second: at least ~1 s, whatever the machine
    assert time.monotonic() - start >= 0.8
    assert client.requests == 6


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_claude_agent_call_holds_one_strict_slot_for_the_call(tmp_path: Path) -> None:
    """The real Claude Code binary against the scripted Anthropic server: one agent call enters
    the Prefect gate once, holding an ``anthropic-api`` slot while Claude Code makes its requests."""
    from contextlib import asynccontextmanager

    from environments.harnesses.binaries import find_binary
    from synthesis.runtime.claude import ClaudeAgent
    from tests.synthesis.fake_anthropic import FakeAnthropic, text_block

    claude = find_binary("claude")
    if claude is None:
        pytest.skip("claude binary missing")
    ensure_paid_api_limits()
    strict = prefect_call_gate(PAID_API_LIMITS["claude"])
    seen = {"entered": 0, "requests_inside": 0}
    fake_requests: list[Any] = []

    @asynccontextmanager
    async def counting_gate():  # noqa: ANN202
        async with strict():
            seen["entered"] += 1
            before = len(fake_requests)
            yield
            seen["requests_inside"] = len(fake_requests) - before

    state = tmp_path / "claude-state"
    state.mkdir()
    with FakeAnthropic(lambda body: [text_block("done")]) as fake:
        fake_requests = fake.requests
        env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake", "HOME": str(state),
               "CLAUDE_CONFIG_DIR": str(state / ".claude"), "XDG_CONFIG_HOME": str(state / ".config"),
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        agent = ClaudeAgent(model="opus", cli_path=claude, env=env, gate=counting_gate)
        result = asyncio.run(agent.run("say done", [], tmp_path / "work", Budget(max_usd=5.0, max_turns=3)))
    assert result.ok, result.error
    assert seen["entered"] == 1 and seen["requests_inside"] >= 1
