"""Asynchronous rollouts with bounded staleness (issue 17): the staleness filter, the async
step loop (real tiny trainer, fake rollouts whose calls record the engine's version when
they are made), per-call ratios of a trajectory spanning two versions, and cancelling an
async ``rl_train`` (real proxy, scheduler and local sandboxes)."""

from __future__ import annotations

import asyncio
import copy
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
import torch

from environments.records import Outcome, RolloutResult
from openforge.presets import TrainConfig
from testkit.models import tiny_llama as make_tiny_llama
from testkit.tasks import one_call_agent_argv
from training.trajectory import prepare_grpo_batch
from training.trajectory.staleness import StalenessPolicy, filter_stale
from training.workflows.activity import Activity

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def result(rollout_id: str, group_id: str, reward: float, status: Outcome = Outcome.ok) -> RolloutResult:
    return RolloutResult(rollout_id=rollout_id, task_id="t", group_id=group_id, harness="fake", backend="fake",
                         status=status, reward=reward, n_calls=2)


def call(index: int, version: int | None, prompt: list[int], response: list[int], logprobs: list[float],
         final: int | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": "x"}}]}
    if final is not None:
        answer["policy_version_final"] = final
    return {"index": index, "api": "chat", "request": {"messages": []}, "response": answer,
            "prompt_token_ids": prompt, "response_token_ids": response, "response_logprobs": logprobs,
            "policy_version": version, "status": "ok"}


# ------------------------------------------------------------------------------ the filter
def test_filter_drops_or_corrects_calls_older_than_max_staleness_and_counts_them() -> None:
    fresh = (result("a", "g", 1.0), [call(0, 2, [3, 4], [5], [-1.0]), call(1, 3, [3, 4, 5, 6], [7], [-1.0])])
    stale = (result("b", "g", 0.0), [call(0, 1, [3, 4], [6], [-1.0])])
    timed_out = (result("c", "g", 0.0, Outcome.timeout), [call(0, 0, [3], [4], [-1.0])])
    kept, report = filter_stale([fresh, stale, timed_out], 3, StalenessPolicy(max_staleness=1, stale_policy="drop"))
    assert [r.rollout_id for r, _ in kept] == ["a", "c"]  # a timeout passes on to the batch builder's own drop
    assert dict(report.histogram) == {1: 1, 0: 1, 2: 1}
    assert report.dropped_trajectories == 1 and report.dropped_calls == 1 and not report.needs_correction
    assert report.spanning_trajectories == 1  # "a": versions 2 and 3, within the bound: trained per call
    m = report.as_metrics()
    assert m["staleness_2"] == 1 and m["stale_dropped_samples"] == 1 and m["staleness_max"] == 2

    kept, report = filter_stale([fresh, stale], 3, StalenessPolicy(max_staleness=1, stale_policy="correct"))
    assert [r.rollout_id for r, _ in kept] == ["a", "b"] and report.needs_correction
    assert report.corrected_calls == 1 and report.dropped_calls == 0

    kept, report = filter_stale([fresh, stale], 3, StalenessPolicy(max_staleness=5, span_policy="drop"))
    assert [r.rollout_id for r, _ in kept] == ["b"] and report.spanning_dropped == 1


def test_a_call_whose_weights_changed_mid_generation_spans_versions_and_unversioned_calls_are_stale() -> None:
    mid = (result("a", "g", 1.0), [call(0, 4, [3], [5, 6], [-1.0, -1.0], final=5)])
    kept, report = filter_stale([mid], 5, StalenessPolicy(max_staleness=1, span_policy="drop"))
    assert kept == [] and report.spanning_trajectories == 1
    unknown = (result("b", "g", 1.0), [call(0, None, [3], [5], [-1.0])])
    kept, report = filter_stale([unknown], 0, StalenessPolicy(max_staleness=100))
    assert kept == [] and report.unversioned_calls == 1 and report.dropped_trajectories == 1


def test_activity_is_the_union_of_busy_intervals_including_open_ones() -> None:
    a = Activity()
    a.closed = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]
    assert a.busy(0.0, 10.0) == pytest.approx(4.0)
    assert a.busy(2.5, 5.5) == pytest.approx(1.0)
    a._open[99] = 8.0
    assert a.busy(0.0, 10.0) == pytest.approx(6.0)


# ---------------------------------------------------------------- the async step loop (fake rollouts)
class FakeEngine:
    """Only what the loop and ``LocalTrainer.push_weights`` use: a version that each update bumps."""

    def __init__(self) -> None:
        self.policy_version = 0

    def update_weights(self, state: Any) -> int:
        self.policy_version += 1
        return self.policy_version


class FakeService:
    """G rollouts per group; each makes two calls that record the engine's version when they
    are made. The first group's first rollout is a straggler: between its calls it waits until
    the engine has moved two versions on."""

    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.straggler: str | None = None
        self.groups = 0

    async def run_groups(self, tasks: list[Any], group_size: int, *, role: str, tag: str) -> list[RolloutResult]:
        self.groups += 1
        first_group = self.groups == 1

        async def one(i: int) -> RolloutResult:
            rid = uuid.uuid4().hex
            v0 = self.engine.policy_version
            prompt, r0 = [3 + i, 4, 5], [6 + i, 7]
            calls = [call(0, v0, prompt, r0, [-2.0, -2.0])]
            if first_group and i == 0:
                self.straggler = rid
                while self.engine.policy_version < v0 + 2:
                    await asyncio.sleep(0.01)
            else:
                await asyncio.sleep(0.02)
            calls.append(call(1, self.engine.policy_version, prompt + r0 + [9], [10 + i], [-2.0]))
            self.calls[rid] = calls
            return result(rid, f"grp-{tag}", float(i % 2))

        return list(await asyncio.gather(*(one(i) for i in range(group_size))))

    def recorded(self, results: list[RolloutResult]) -> list[tuple[RolloutResult, list[dict[str, Any]]]]:
        return [(r, self.calls[r.rollout_id]) for r in results]


class SpyTrainer:
    """The real LocalTrainer (tiny random Llama); remembers what each step was given."""

    def __init__(self, cfg: TrainConfig, engine: FakeEngine) -> None:
        from training.trainers.local import LocalTrainer

        self.inner = LocalTrainer(make_tiny_llama(), None, cfg)
        self.engine = engine
        self.tokenizer = None
        self.seen: list[tuple[int, list[Any], bool | None]] = []

    def step(self, samples: list[Any], *, importance_correction: bool | None = None) -> dict[str, float]:
        self.seen.append((self.engine.policy_version, list(samples), importance_correction))
        return self.inner.step(samples, importance_correction=importance_correction)

    def push_weights(self, engine: Any) -> Any:
        return self.inner.push_weights(engine)


async def _run_loop(stale_policy: str, steps: int = 4) -> tuple[FakeService, SpyTrainer, list[Any]]:
    from training.workflows.async_rl import async_steps
    from training.workflows.common import in_thread

    cfg = TrainConfig(async_rollouts=True, max_staleness=1, stale_policy=stale_policy, train_batch_size=1,
                      group_size=2, lr=1e-3, drop_zero_variance_groups=False, max_prompt_length=32,
                      max_response_length=32)
    engine = FakeEngine()
    service = FakeService(engine)
    trainer = SpyTrainer(cfg, engine)
    out: list[Any] = []

    async def push() -> None:
        await in_thread(trainer.push_weights, engine)

    await asyncio.wait_for(async_steps(
        service=service, trainer=trainer, engine=engine, push=push, cfg=cfg, budget=30.0, steps=steps,
        sampler=_OneTask(), engine_activity=Activity(), on_step=out.append), timeout=60)
    return service, trainer, out


class _OneTask:
    """The loop's task sampler over the fake service's one task."""

    solved: frozenset[str] = frozenset()

    def draw(self, n: int) -> list[str]:
        return ["t"] * n

    def observe(self, results: Any) -> None:
        pass


def test_a_sample_older_than_max_staleness_is_never_trained() -> None:
    service, trainer, steps = asyncio.run(_run_loop("drop"))
    assert service.straggler is not None
    trained = [(v, s) for v, samples, _ in trainer.seen for s in samples]
    assert trained, "the loop trained nothing"
    assert all(v - s.policy_version <= 1 for v, s in trained), [(v, s.policy_version) for v, s in trained]
    assert service.straggler not in {s.rollout_id for _, s in trained}
    # the straggler's group came back and was dropped, counted, at a step 2 versions on
    dropped = [a for a in steps if a.staleness.dropped_calls]
    assert dropped and dropped[0].metrics["stale_dropped_samples"] >= 2
    assert dropped[0].metrics["staleness_2"] >= 1 and dropped[0].staleness.spanning_trajectories >= 1
    assert all(a.metrics.get("updated", 1.0) for a in steps if a.samples)  # whatever was kept was trained


def test_stale_policy_correct_trains_stale_samples_with_importance_correction() -> None:
    _, trainer, steps = asyncio.run(_run_loop("correct"))
    stale_steps = [(v, samples, ic) for v, samples, ic in trainer.seen
                   if any(v - s.policy_version > 1 for s in samples)]
    assert stale_steps, "the straggler's stale samples were not trained under stale_policy = correct"
    assert all(ic is True for _, _, ic in stale_steps)
    assert all(ic is None for v, samples, ic in trainer.seen if all(v - s.policy_version <= 1 for s in samples))
    corrected = [a for a in steps if a.staleness.corrected_calls]
    assert corrected and "tis_weight_mean" in corrected[0].metrics and corrected[0].metrics["importance_correction"] == 1.0


def test_rollouts_of_the_next_step_run_while_the_current_step_trains() -> None:
    service, _, steps = asyncio.run(_run_loop("drop", steps=3))
    # window = train_batch_size * (1 + max_staleness) = 2 groups: one was always in flight beyond the step's
    assert service.groups >= 4
    assert all(a.metrics["groups_running"] >= 1 for a in steps)


# ------------------------------------------------------------- per-call ratios across two versions
def _logprobs(model: torch.nn.Module, prompt: list[int], response: list[int]) -> list[float]:
    from training.trainers.local.batching import collate, response_logprobs

    batch = collate([prompt], [response], [[1] * len(response)], 0, torch.device("cpu"))
    with torch.no_grad():
        return response_logprobs(model.eval(), batch)[0, : len(response)].tolist()


def test_a_trajectory_spanning_two_versions_gets_per_call_ratios_against_the_right_versions() -> None:
    from training.trainers.local import LocalTrainer

    v0, v1 = make_tiny_llama(seed=0), make_tiny_llama(seed=1)
    p0, r0 = [3, 4, 5, 6], [7, 8, 9]
    p1, r1 = p0 + r0 + [10, 11], [12, 13]  # call 1 extends call 0: merged if the versions were equal
    span = [call(0, 0, p0, r0, _logprobs(v0, p0, r0)), call(1, 1, p1, r1, _logprobs(v1, p1, r1))]
    q0, q1 = [3, 4, 5, 20], [21, 22]
    other = [call(0, 1, q0, q1, _logprobs(v1, q0, q1))]
    items = [(result("span", "g", 1.0), span), (result("other", "g", 0.0), other)]

    kept, report = filter_stale(items, 1, StalenessPolicy(max_staleness=1, span_policy="per_call"))
    assert len(kept) == 2 and report.spanning_trajectories == 1
    samples, _ = prepare_grpo_batch(kept, merge=True)
    spanning = sorted((s for s in samples if s.rollout_id == "span"), key=lambda s: s.call_index)
    assert [(s.call_indices, s.policy_version) for s in spanning] == [([0], 0), ([1], 1)]

    cap = 2.0
    cfg = TrainConfig(lr=1e-3, tis_cap=cap, max_prompt_length=32, max_response_length=32, micro_batch_size=4)
    trainer = LocalTrainer(copy.deepcopy(v1), None, cfg)  # the trainer is at version 1
    metrics = trainer.step(samples, importance_correction=True)
    # expected, token by token: π_v1 / π_(version that sampled the call)
    cur = {id(s): _logprobs(v1, s.prompt_ids, s.response_ids) for s in samples}
    ratios = [math.exp(c - b) for s in samples for c, b in zip(cur[id(s)], s.response_logprobs, strict=True)]
    assert metrics["engine_ratio_mean"] == pytest.approx(sum(ratios) / len(ratios), rel=1e-4)
    assert metrics["tis_weight_mean"] == pytest.approx(sum(min(r, cap) for r in ratios) / len(ratios), rel=1e-4)
    # and the version-0 call's ratio really differs from 1 (a wrong version would make all of them 1)
    call0 = [math.exp(c - b) for c, b in zip(cur[id(spanning[0])], spanning[0].response_logprobs, strict=True)]
    call1 = [math.exp(c - b) for c, b in zip(cur[id(spanning[1])], spanning[1].response_logprobs, strict=True)]
    assert max(abs(r - 1) for r in call0) > 0.05 and all(abs(r - 1) < 1e-4 for r in call1)


# ------------------------------------------------------------------ cancelling an async rl_train
def test_cancelling_an_async_run_leaves_no_sandbox_or_claim_behind(tmp_path: Path, tiny_policy_dir: Path) -> None:
    from environments.taskdir import load_task
    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.db import make_engine, session_scope
    from storage.models import Rollout, Run
    from testkit.tasks import make_task
    from training.orchestrator.procs import all_sandbox_ids
    from training.workflows.rl import rl_train

    preset_file = tmp_path / "async.toml"
    preset_file.write_text(f"""
name = "async-cancel"
[train]
async_rollouts = true
max_staleness = 1
train_batch_size = 1
group_size = 2
steps = 3
[rollout]
harness = "command"
backend = "local"
concurrency = 8
timeout_sec = 120
[engine]
kind = "local"
model_path = "{tiny_policy_dir}"
max_batch = 4
threads = 1
[harness_options]
argv = ["sleep", "300"]
""")
    preset = load_preset(preset_file)
    task = load_task(make_task(tmp_path / "tasks"))
    run_id = "async-cancel-run"

    async def main() -> None:
        run = asyncio.create_task(rl_train(preset, [task], run_id=run_id, out_dir=tmp_path / "run"))
        db = make_engine(get_settings().db_url)
        try:
            for _ in range(600):  # both groups of the window (step 1 and step 2: 4 rollouts) are running
                await asyncio.sleep(0.1)
                if run.done():
                    break
                with session_scope(db) as s:
                    ids = {r.id for r in s.query(Rollout).filter(Rollout.run_id == run_id)}
                if len(ids) == 4 and ids <= all_sandbox_ids():
                    break
            else:
                pytest.fail("the 4 sandboxes of the async window never ran")
            assert not run.done(), run.exception()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
        finally:
            db.dispose()

    asyncio.run(main())
    db = make_engine(get_settings().db_url)
    try:
        with session_scope(db) as s:
            rows = s.query(Rollout).filter(Rollout.run_id == run_id).all()
            statuses = {(r.status, r.error_kind) for r in rows}
            ids = {r.id for r in rows}
            run_row = s.get(Run, run_id)
            run_status = run_row.status if run_row is not None else None
    finally:
        db.dispose()
    assert len(ids) == 4
    assert ids & all_sandbox_ids() == set(), "a sandbox outlived the cancelled run"
    assert statuses == {("infra_error", "cancelled")}, "a rollout row still claims to be running"
    assert run_status == "failed"


# ------------------------------------------------------------------------- preset and composition
def test_async_keys_are_typed_and_refused_where_nothing_would_read_them(tmp_path: Path) -> None:
    from openforge.presets import PresetError, load_preset
    from training.workflows.compose import CompositionError, compose

    preset = load_preset("local", {"train.async_rollouts": True, "train.stale_policy": "correct"})
    assert preset.train.max_staleness == 1 and preset.train.span_policy == "per_call"
    assert not load_preset("local").train.async_rollouts  # opt-in: sync stays the default
    with pytest.raises(PresetError, match="max_staleness = 0 with async_rollouts"):
        load_preset("local", {"train.async_rollouts": True, "train.max_staleness": 0})
    with pytest.raises(PresetError, match="stale_policy"):
        load_preset("local", {"train.stale_policy": "mix"})
    claw = load_preset("claw", {"train.async_rollouts": True})  # vLLM on cuda: veRL, which drops nothing
    with pytest.raises(CompositionError, match="train.stale_policy = 'drop' with veRL's asynchronous trainer"):
        compose(claw, "rl")
    vllm_local = load_preset("claw", {"train.async_rollouts": True, "train.trainer": "local"})
    plan = compose(vllm_local, "rl")  # the local trainer pauses vLLM for each reload (gate.py)
    assert plan.engine.kind == "vllm" and plan.trainer is not None and plan.trainer.kind == "local"


def test_an_async_run_trains_on_real_rollouts_and_reports_idle_and_staleness(tmp_path: Path,
                                                                            tiny_policy_dir: Path) -> None:
    """The real path: local engine (tiny policy) behind the proxy, command-harness rollouts in
    local sandboxes, the local trainer; 3 async steps, every one an optimiser update."""
    from environments.taskdir import load_task
    from openforge.presets import load_preset
    from openforge.settings import get_settings
    from storage.db import make_engine, session_scope
    from storage.models import Rollout
    from testkit.tasks import make_task
    from training.orchestrator.procs import all_sandbox_ids
    from training.workflows.rl import rl_train

    preset = load_preset("local", {
        "train.async_rollouts": True, "train.max_staleness": 1, "train.train_batch_size": 1, "train.group_size": 2,
        "train.entropy_coef": 0.001, "train.drop_zero_variance_groups": False, "train.lr": 1e-4,
        "engine.model_path": str(tiny_policy_dir), "engine.context_length": None, "engine.threads": 1,
        "rollout.harness": "command", "rollout.concurrency": 4, "rollout.timeout_sec": 120,
        "harness_options": {"argv": one_call_agent_argv()}})
    task = load_task(make_task(tmp_path / "tasks"))
    steps: list[Any] = []
    report = asyncio.run(rl_train(preset, [task], steps=3, run_id="async-real", out_dir=tmp_path / "run",
                                  on_step=steps.append))
    assert [s.mode for s in steps] == ["async"] * 3 and all(s.updates == 1 for s in steps)
    assert report.checkpoint and Path(report.checkpoint, "config.json").is_file()
    for s in steps:
        trainable = s.outcomes.get("ok", 0) + s.outcomes.get("policy_error", 0)
        assert trainable and sum(s.staleness.values()) == trainable  # one call per rollout, every one counted
        assert all(k <= 1 for k in s.staleness) or s.stale_dropped  # older than max_staleness: dropped
        assert 0.0 <= s.engine_idle_seconds <= s.seconds and 0.0 <= s.trainer_idle_seconds < s.seconds
        assert "staleness_mean" in s.metrics and s.metrics["groups_taken"] == 1
    db = make_engine(get_settings().db_url)
    try:
        with session_scope(db) as session:
            rows = session.query(Rollout).filter(Rollout.run_id == "async-real").all()
            ids, running = {r.id for r in rows}, [r.id for r in rows if r.status in ("pending", "running")]
    finally:
        db.dispose()
    assert len(ids) >= 6 and ids & all_sandbox_ids() == set() and running == []


# --------------------------------------------------------------------------- stragglers, sync
class IdleEngine:
    """An engine nobody calls (the rollouts below make no model call)."""

    policy_version = 0

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("not called")

    async def list_models(self) -> list[str]:
        return ["policy"]

    async def aclose(self) -> None:
        return None


def test_a_sync_straggler_past_its_budget_is_killed_classified_timeout_and_its_group_refilled(tmp_path: Path) -> None:
    import time

    from environments.taskdir import load_task
    from testkit.tasks import make_task
    from training.orchestrator.procs import all_sandbox_ids
    from training.workflows.service import RolloutService

    task = load_task(make_task(tmp_path / "tasks"))
    # the first attempt straggles (sleep 300); its refill (marked OPENFORGE_REFILL_OF) answers at once
    argv = ["bash", "-c", '[ -n "$OPENFORGE_REFILL_OF" ] || sleep 300; echo hello > out.txt']

    async def main() -> tuple[list[RolloutResult], float]:
        async with RolloutService(IdleEngine(), harness="command", refill=1, timeout_sec=3.0,
                                  harness_options={"argv": argv}, run_id="sync-straggler") as service:
            t0 = time.perf_counter()
            results = await service.run_groups([task], 1, tag="s1")
            return results, time.perf_counter() - t0

    results, seconds = asyncio.run(main())
    assert [(r.status, r.error_kind) for r in results] == [(Outcome.timeout, "deadline_exceeded"), (Outcome.ok, None)]
    assert results[0].group_id == results[1].group_id and results[1].reward == 1.0
    assert seconds < 60, "the step waited for the straggler instead of its budget"
    assert {r.rollout_id for r in results} & all_sandbox_ids() == set()
