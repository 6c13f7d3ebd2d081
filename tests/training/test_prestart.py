"""The synchronous loop's early start (``train.prestart_rollouts``): the next step's rollouts
start while the current step trains, their calls wait at the gate for the new weights, and
every call is still sampled by the trainer's current policy. Real path: the tiny policy in
the local engine behind the proxy, command-harness rollouts in local sandboxes, the local
trainer; the weight push is slowed down so that calls do arrive while it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from testkit.tasks import one_call_agent_argv
from training.workflows.gate import CallGate, GatedEngine

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Echo:
    policy_version = 7

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self.seen.append(body)
        return {"version": self.policy_version}

    async def list_models(self) -> list[str]:
        return ["policy"]


def test_a_closed_gate_holds_calls_until_it_opens_and_counts_their_wait() -> None:
    async def main() -> None:
        inner, gate = Echo(), CallGate()
        engine = GatedEngine(inner, gate)
        assert await engine.chat_completions({"n": 1}) == {"version": 7} and engine.waits == []  # open: no wait
        gate.close()
        call = asyncio.ensure_future(engine.chat_completions({"n": 2}))
        await asyncio.sleep(0.2)
        assert not call.done() and len(inner.seen) == 1  # held before the engine saw it
        inner.policy_version = 8  # the new weights arrive while it waits
        gate.open()
        assert await call == {"version": 8}
        assert len(engine.waits) == 1 and engine.waits[0][1] >= 0.15
        assert engine.policy_version == 8 and await engine.list_models() == ["policy"]

    asyncio.run(main())


class SlowReload(Echo):
    """An out-of-process engine in miniature: a call takes 0.3 s and reads the version at its
    start and at its end; a reload swaps the version. A call that saw two versions was served
    partly by each set of weights."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed = 0

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self.seen.append(body)
        start = self.policy_version
        await asyncio.sleep(0.3)
        self.mixed += self.policy_version != start
        return {"version": start}


def test_pause_waits_for_the_calls_inside_and_holds_new_ones_until_the_reload_is_done() -> None:
    """The asynchronous loop's weight push to vLLM (rl.CheckpointReload.push_under_rollouts):
    no call is served across the reload, and none is lost."""
    async def main() -> None:
        inner = SlowReload()
        engine = GatedEngine(inner, CallGate())
        inside = [asyncio.ensure_future(engine.chat_completions({"n": i})) for i in range(3)]
        await asyncio.sleep(0.05)
        assert engine.calls_inside == 3
        drained = await engine.pause()
        assert all(c.done() for c in inside) and engine.calls_inside == 0 and drained >= 0.2
        held = asyncio.ensure_future(engine.chat_completions({"n": 3}))
        await asyncio.sleep(0.1)
        assert not held.done() and len(inner.seen) == 3 and engine.calls_inside == 0  # held before the engine
        inner.policy_version = 8  # the reload
        engine.resume()
        assert await held == {"version": 8}
        assert [c.result() for c in inside] == [{"version": 7}] * 3 and inner.mixed == 0

        # a reload without the pause: the calls inside see both versions
        inside = [asyncio.ensure_future(engine.chat_completions({"n": i})) for i in range(2)]
        await asyncio.sleep(0.05)
        inner.policy_version = 9
        await asyncio.gather(*inside)
        assert inner.mixed == 2

    asyncio.run(main())


def test_the_gate_and_the_drain_work_across_threads_as_the_proxy_uses_them() -> None:
    """The proxy serves on its own thread and event loop; the run pauses and resumes from its
    own. A call held at the gate goes on as soon as it opens, and the pause returns as soon as
    the last call inside ends (an ``asyncio.Event`` set from another thread wakes nobody until
    the waiting loop turns for another reason: here the 2 s timeout)."""
    import threading

    inner = SlowReload()
    engine = GatedEngine(inner, CallGate())
    proxy_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=proxy_loop.run_forever, daemon=True)
    thread.start()

    def on_proxy(i: int) -> Any:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(engine.chat_completions({"n": i}), proxy_loop))

    async def main() -> None:
        inside = [on_proxy(i) for i in range(3)]
        await asyncio.sleep(0.05)
        t0 = asyncio.get_running_loop().time()
        await asyncio.wait_for(engine.pause(), 2.0)
        assert asyncio.get_running_loop().time() - t0 < 1.0, "the drain was not woken by the proxy's thread"
        assert engine.calls_inside == 0 and [await c for c in inside] == [{"version": 7}] * 3
        held = on_proxy(3)
        await asyncio.sleep(0.1)
        assert not held.done() and len(inner.seen) == 3
        inner.policy_version = 8
        t1 = asyncio.get_running_loop().time()
        engine.resume()
        assert await asyncio.wait_for(held, 2.0) == {"version": 8}
        assert asyncio.get_running_loop().time() - t1 < 1.0 and inner.mixed == 0

    try:
        asyncio.run(main())
    finally:
        proxy_loop.call_soon_threadsafe(proxy_loop.stop)
        thread.join(5)
        proxy_loop.close()


def _preset(tiny_policy_dir: Path, prestart: bool) -> Any:
    from openforge.presets import load_preset

    return load_preset("local", {
        "train.prestart_rollouts": prestart, "train.train_batch_size": 1, "train.group_size": 2,
        "train.entropy_coef": 0.001, "train.drop_zero_variance_groups": False, "train.lr": 1e-4,
        "engine.model_path": str(tiny_policy_dir), "engine.context_length": None, "engine.threads": 1,
        "rollout.harness": "command", "rollout.concurrency": 4, "rollout.timeout_sec": 300,
        "harness_options": {"argv": one_call_agent_argv()}})


async def _sync_run(preset: Any, tmp_path: Path, run_id: str, steps: int, push_delay: float,
                    on_step: Any) -> tuple[GatedEngine, Any]:
    """``steps`` steps of :func:`sync_steps` on the real composition; the push sleeps first."""
    import random

    from environments.taskdir import load_task
    from openforge.settings import get_settings
    from storage.db import make_engine
    from storage.migrate import upgrade
    from testkit.tasks import make_task
    from training.workflows.activity import TimedEngine
    from training.workflows.common import rollout_service
    from training.workflows.rl import WeightSync, _policy, sync_steps
    from training.workflows.task_sampler import TaskSampler

    class SlowPush(WeightSync):  # a big model's push: the early calls arrive while it runs
        async def push(self, trainer: Any, engine: Any) -> None:
            await asyncio.sleep(push_delay)
            await super().push(trainer, engine)

    db = make_engine(get_settings().db_url)
    upgrade(get_settings().db_url, db)
    engine, trainer, _ = await _policy(preset, "local", None, tmp_path / run_id, db, run_id)
    gated = GatedEngine(TimedEngine(engine), CallGate())
    sampler = TaskSampler([load_task(make_task(tmp_path / "tasks"))], random.Random(0))
    try:
        async with rollout_service(preset, gated, run_id=run_id) as service:
            await sync_steps(service=service, trainer=trainer, engine=engine, sync=SlowPush(), cfg=preset.train,
                             sampler=sampler, steps=steps, gate=gated.gate, on_step=on_step)
    finally:
        await engine.aclose()
        db.dispose()
    return gated, trainer


@pytest.mark.parametrize("prestart", [True, False], ids=["prestart", "after-push"])
def test_early_started_rollouts_wait_for_the_new_weights_and_stay_on_policy(tmp_path: Path, tiny_policy_dir: Path,
                                                                          prestart: bool) -> None:
    from training.orchestrator.procs import all_sandbox_ids

    steps: list[Any] = []
    gated, trainer = asyncio.run(_sync_run(_preset(tiny_policy_dir, prestart), tmp_path, f"pre-{prestart}", 3, 2.0,
                                           steps.append))
    assert [s.step for s in steps] == [1, 2, 3] and trainer.global_step == 3  # an update every step
    for s in steps:
        assert s.metrics.get("updated") and s.stale.histogram == {0: 2}  # both calls sampled by the current weights
        assert s.began <= s.rollouts_done <= s.built <= s.trained <= s.pushed
    assert steps[0].rollouts_started == steps[0].began
    if prestart:  # steps 2 and 3 started during the previous step's training; some calls waited at the gate
        assert all(s.rollouts_started < s.began for s in steps[1:])
        assert gated.waits and max(w for _, w in gated.waits) > 0.5
        # every wait ended when a step's weights were in: at or just after some step's push
        pushes = [s.pushed for s in steps]
        assert all(any(0 <= end - p < 0.5 for p in pushes) for end, _ in gated.waits)
    else:
        assert all(s.rollouts_started == s.began for s in steps[1:]) and gated.waits == []
    ids = {r.rollout_id for s in steps for r in s.results}
    assert len(ids) == 6 and ids & all_sandbox_ids() == set()


def test_cancelling_while_early_rollouts_wait_removes_their_sandboxes(tmp_path: Path, tiny_policy_dir: Path) -> None:
    from openforge.settings import get_settings
    from storage.db import make_engine, session_scope
    from storage.models import Rollout
    from training.orchestrator.procs import all_sandbox_ids

    run_id = "pre-cancel"

    async def main() -> None:
        run = asyncio.ensure_future(_sync_run(_preset(tiny_policy_dir, True), tmp_path, run_id, 3, 300.0,
                                              lambda _: None))
        db = make_engine(get_settings().db_url)
        try:
            for _ in range(1200):  # step 1 done, its push sleeping; step 2's two sandboxes running
                await asyncio.sleep(0.1)
                assert not run.done(), run.exception()
                with session_scope(db) as s:
                    early = {r.id for r in s.query(Rollout).filter(Rollout.run_id == run_id,
                                                                    Rollout.group_id.like("%-s2-%"))}
                if len(early) == 2 and early <= all_sandbox_ids():
                    break
            else:
                pytest.fail("step 2's rollouts never started beside step 1's push")
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert early & all_sandbox_ids() == set(), "an early-started sandbox outlived the cancelled run"
            with session_scope(db) as s:
                states = {(r.status, r.error_kind) for r in s.query(Rollout).filter(Rollout.id.in_(early))}
            assert states == {("infra_error", "cancelled")}, "an early-started rollout still claims to be running"
        finally:
            db.dispose()

    asyncio.run(main())


def test_prestart_is_refused_where_nothing_reads_it() -> None:
    from openforge.presets import load_preset
    from training.workflows.compose import CompositionError, compose

    assert load_preset("local").train.prestart_rollouts  # on by default
    compose(load_preset("local", {"train.prestart_rollouts": False}), "rl")  # read by the sync loop
    with pytest.raises(CompositionError, match="train.prestart_rollouts is read by the local trainer's synchronous"):
        compose(load_preset("local", {"train.prestart_rollouts": True, "train.async_rollouts": True}), "rl")
    with pytest.raises(CompositionError, match="train.prestart_rollouts"):
        compose(load_preset("claw", {"train.prestart_rollouts": False}), "rl")  # veRL on the GPU preset
