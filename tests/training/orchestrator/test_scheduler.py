"""The scheduler over the local backend and the real runner: concurrency cap, refill,
cancellation cleanup, DB rows, and proxy registration through the sandbox relay."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from storage.db import session_scope
from storage.models import Rollout
from tests.training.orchestrator.conftest import PROXY_CALL
from training.orchestrator.local import LocalBackend
from training.orchestrator.procs import all_sandbox_ids
from training.orchestrator.scheduler import Scheduler, new_rollout_id, run_rollouts


def spec(task: Path, harness: str, timeout: float = 120, **kw: object) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=timeout, **kw)


def _intervals(home: Path, ids: list[str]) -> list[tuple[float, float]]:
    out = []
    for rid in ids:
        agent = home / "rollouts" / rid / "logs" / "agent"
        out.append((float((agent / "t0").read_text()), float((agent / "t1").read_text())))
    return out


async def test_concurrency_cap_is_respected(tiny_task: Path, openforge_home: Path) -> None:
    stamp = 'date +%s.%N > "$LOGS_DIR/agent/t0"; sleep 1.5; date +%s.%N > "$LOGS_DIR/agent/t1"'
    specs = [spec(tiny_task, "command", harness_options={"argv": ["bash", "-c", stamp]}) for _ in range(5)]
    backend = LocalBackend()
    try:
        results = await run_rollouts(backend, specs, concurrency=2)
    finally:
        await backend.aclose()
    assert [r.status for r in results] == [Outcome.ok] * 5
    spans = _intervals(openforge_home, [s.rollout_id for s in specs])
    overlap = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert overlap <= 2
    assert overlap == 2  # and the cap is used


async def test_refill_retries_infra_errors_as_fresh_rollouts(tiny_task: Path, db_engine) -> None:
    # Crashes unless it is a refill (the scheduler marks refills with OPENFORGE_REFILL_OF).
    flaky = ["bash", "-c", '[ -n "$OPENFORGE_REFILL_OF" ] || exit 3']
    first = spec(tiny_task, "command", group_id="g1", harness_options={"argv": flaky})
    backend = LocalBackend()
    try:
        results = await run_rollouts(backend, [first], refill=2, db=db_engine)
    finally:
        await backend.aclose()
    assert [r.status for r in results] == [Outcome.infra_error, Outcome.ok]
    assert results[0].rollout_id == first.rollout_id
    assert results[1].rollout_id != first.rollout_id and results[1].group_id == "g1"
    with session_scope(db_engine) as db:
        rows = {r.id: r for r in db.query(Rollout).all()}
    assert rows[first.rollout_id].status == "infra_error" and rows[first.rollout_id].error_kind == "harness_crash"
    assert rows[results[1].rollout_id].meta["attempt_of"] == first.rollout_id


async def test_refill_is_bounded(tiny_task: Path) -> None:
    crash = spec(tiny_task, "command", harness_options={"argv": ["false"]})
    backend = LocalBackend()
    try:
        results = await run_rollouts(backend, [crash], refill=1)
    finally:
        await backend.aclose()
    assert [r.status for r in results] == [Outcome.infra_error, Outcome.infra_error]


@pytest.mark.parametrize("repeated", [False, True], ids=["one-cancel", "a-cancel-every-loop-turn"])
async def test_cancel_cleans_every_sandbox(tiny_task: Path, openforge_home: Path, repeated: bool) -> None:
    """Ctrl-C cancels the CLI's main task once; an anyio cancel scope (Prefect's engines are
    built on anyio) delivers its cancel again on every turn of the loop: cleanup must run to
    its end through all of them, not only the first."""
    backend = LocalBackend()
    specs = [spec(tiny_task, "command", harness_options={"argv": ["sleep", "300"]}) for _ in range(3)]
    sched = Scheduler(backend, concurrency=3)

    async def consume() -> None:
        async for _ in sched.run(specs):
            pass

    task = asyncio.create_task(consume())
    for _ in range(300):  # wait until all three sandboxes run
        await asyncio.sleep(0.1)
        if len({s.rollout_id for s in specs} & all_sandbox_ids()) == 3:
            break
    cancels = 0
    while not task.done() and (repeated or cancels == 0):
        task.cancel()
        cancels += 1
        await asyncio.sleep(0)
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        assert cancels > 1 if repeated else cancels == 1
        assert {s.rollout_id for s in specs} & all_sandbox_ids() == set()
        assert await backend.live_sandboxes() == []
    finally:
        await backend.aclose()


@pytest.mark.slow
async def test_proxy_registration_and_relay(tiny_task: Path, sqlite_url: str, db_engine) -> None:
    from testkit.fakes.vllm import FakeVLLM
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    call = PROXY_CALL
    async with FakeVLLM() as fake:
        engine = OpenAICompatEngine(fake.base_url)
        try:
            async with ProxyServer(engine, db_url=sqlite_url) as proxy:
                client = proxy.client()
                backend = LocalBackend()
                try:
                    s = spec(tiny_task, "command", harness_options={"argv": [sys.executable, "-c", call]})
                    result = await Scheduler(backend, proxy=client, db=db_engine).run_one(s)
                finally:
                    await backend.aclose()
                    await client.aclose()
        finally:
            await engine.aclose()
    assert result.status == Outcome.ok, (result, (Path(result.logs_dir) / "agent" / "harness.log").read_text())
    assert result.n_calls == 1
    assert result.isolation in ("bubblewrap", "process")
    with session_scope(db_engine) as db:
        row = db.get(Rollout, result.rollout_id)
        assert row is not None and row.n_calls == 1 and row.status == "ok"


@pytest.mark.slow
async def test_time_the_engine_spends_answering_does_not_count_against_the_rollout_timeout(
        tiny_task: Path, sqlite_url: str, db_engine) -> None:
    """An engine that takes 12 s to answer (a loaded CPU, a busy GPU server) times out neither
    a task whose agent timeout is 6 s (the runner's clock) nor a rollout with an 8 s budget (the
    scheduler's): budgets are the harness's and the sandbox's time (environments/deadline.py).
    Without the proxy's engine clock at the scheduler, the same rollout times out."""
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from testkit.tasks import make_task

    tiny_task = make_task(tiny_task.parent, "short-agent-timeout", agent_timeout=6.0)
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    results = {}
    async with FakeVLLM() as fake:
        engine = OpenAICompatEngine(fake.base_url, timeout=60)
        try:
            async with ProxyServer(engine, db_url=sqlite_url) as proxy:
                client = proxy.client()
                backend = LocalBackend()
                try:
                    for label, with_clock in (("excluded", True), ("counted", False)):
                        fake.script(FakeReply.text("ok", delay=12.0))
                        s = spec(tiny_task, "command", timeout=8, harness_options={"argv": [sys.executable, "-c", PROXY_CALL]})
                        scheduler = Scheduler(backend, proxy=client, db=db_engine)
                        if not with_clock:
                            scheduler._engine_clock = lambda _spec: None  # type: ignore[method-assign]
                        results[label] = await scheduler.run_one(s)
                finally:
                    await backend.aclose()
                    await client.aclose()
        finally:
            await engine.aclose()
    ok, counted = results["excluded"], results["counted"]
    assert ok.status == Outcome.ok and ok.n_calls == 1, ok
    assert ok.seconds > 12 and "timed out" not in (ok.error or ""), ok  # the agent finished its call
    assert counted.status == Outcome.timeout and "8s" in (counted.error or ""), counted
