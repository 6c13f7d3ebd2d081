"""GRPO with the local trainer: roll out task groups, rebuild samples, update.

What runs is the preset's composition (:mod:`training.workflows.compose`): the local
trainer with the in-process engine (``engine.kind = 'local'``) or with a vLLM server
(``'vllm'``), or veRL's GRPO (``train.trainer = 'verl'``, handed to
:func:`training.trainers.verl.run.run_verl`).

One step: sample ``train.train_batch_size`` tasks → G = ``train.group_size`` rollouts of
each through the real harness in sandboxes (the proxy records every call, with token ids
and logprobs from the engine) → one sample per call, ``r_t = γ^(T−t)·r_T``, group
advantages (zero-variance groups reported and skipped) → one optimiser step → the new
weights reach the engine (:class:`WeightSync`: in place for the local engine; a saved HF
checkpoint the vLLM server reloads) and its policy version becomes the trainer's step →
metrics to the DB.

With ``train.async_rollouts`` the steps come from :func:`training.workflows.async_rl.async_steps`
instead: rollouts of the next ``train.max_staleness`` steps run while a step trains, and a
step trains on the first finished groups whose calls are fresh enough
(:mod:`training.trajectory.staleness`). Both modes record engine and trainer idle time and
the staleness histogram per step.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from environments.records import RolloutResult
from environments.taskdir import TaskDir
from openforge.aio import outlast, thread_outcome
from openforge.presets import Preset
from openforge.settings import get_settings
from storage.db import make_engine
from storage.migrate import upgrade
from training.trajectory.batch import BatchReport
from training.trajectory.staleness import StalenessPolicy, StalenessReport, filter_stale
from training.workflows.activity import TimedEngine
from training.workflows.common import (
    grpo_batch,
    in_thread,
    local_engine,
    mean_reward,
    outcome_counts,
    rollout_service,
    vllm_engine,
)
from training.workflows.compose import compose
from training.workflows.gate import CallGate, GatedEngine
from training.workflows.plots import curves_png
from training.workflows.reports import RLReport, StepRecord
from training.workflows.service import mark_unfinished_cancelled
from training.workflows.task_sampler import FULL_REWARD, TaskSampler

log = logging.getLogger(__name__)


class NoLearningSignal(RuntimeError):
    """A GRPO run that made no optimiser update: every group had zero reward variance (or
    no sample fit the window), so the "trained" checkpoint would be the start weights."""


async def rl_train(
    preset: Preset,
    tasks: Sequence[TaskDir],
    *,
    model_path: str | Path | None = None,
    steps: int | None = None,
    run_id: str | None = None,
    out_dir: str | Path | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
) -> RLReport:
    """Run GRPO for ``steps`` (default ``train.steps``); returns the per-step report.

    Raises :class:`NoLearningSignal` when no step made an optimiser update."""
    t0 = time.perf_counter()
    cfg = preset.train
    steps = cfg.steps if steps is None else steps
    run_id = run_id or f"rl-{int(time.time())}"
    out = Path(out_dir) if out_dir else get_settings().runs_dir / run_id
    composition = compose(preset, "rl", model_path, run_dir=out)
    composition.require_runnable()  # one line naming the preset key, before anything loads
    if composition.trainer is not None and composition.trainer.kind == "verl":
        from training.trainers.verl.run import run_verl

        return await run_verl(preset, tasks, composition, model_path=model_path, steps=steps, run_id=run_id, out_dir=out)
    out.mkdir(parents=True, exist_ok=True)
    sampler = TaskSampler(tasks, random.Random(cfg.seed), skip_solved=cfg.skip_solved_tasks)
    db = make_engine(get_settings().db_url)
    upgrade(get_settings().db_url, db)  # the trainer records the run before the rollout service starts
    records: list[StepRecord] = []
    engine: Any = None
    try:
        engine, trainer, sync = await _policy(preset, composition.engine.kind, model_path, out, db, run_id)
    except BaseException:
        if engine is not None:
            await engine.aclose()
        db.dispose()
        raise

    def emit(record: StepRecord) -> None:
        if trainer.recorder is not None:
            # keyed by the optimiser step, like the trainer's own metrics (an RL step makes
            # ppo_epochs x mini-batches updates); the RL step is a metric of its own
            trainer.recorder.log(trainer.global_step, {"rl_step": float(record.step),
                                               "rollout_reward_mean": record.reward_mean,
                                               "rollout_success_rate": record.success_rate,
                                               "episode_calls": record.episode_calls,
                                               "zero_variance_groups": float(record.zero_variance_groups),
                                               "rl_step_updates": float(record.updates),
                                               "engine_idle_seconds": record.engine_idle_seconds,
                                               "trainer_idle_seconds": record.trainer_idle_seconds,
                                               **{k: v for k, v in record.metrics.items()
                                                  if k.startswith(("staleness_", "stale_", "spanning_", "solved_"))}})
        records.append(record)
        log.info("rl step %d (%s): reward %.3f, %d samples, %d/%d zero-variance groups, %d updates, idle engine "
                 "%.1fs trainer %.1fs of %.1fs", record.step, record.mode, record.reward_mean, record.samples,
                 record.zero_variance_groups, record.groups, record.updates, record.engine_idle_seconds,
                 record.trainer_idle_seconds, record.seconds)
        if on_step is not None:
            on_step(record)

    timed = TimedEngine(engine)  # the proxy's engine calls: the engine's busy time
    gate = CallGate()  # the sync loop's early-started rollouts wait here for the new weights
    gated = GatedEngine(timed, gate)
    try:
        async with rollout_service(preset, gated, run_id=run_id) as service:
            if cfg.async_rollouts:
                from training.workflows.async_rl import async_steps

                async def push() -> None:
                    await sync.push_under_rollouts(trainer, engine, gated)

                await async_steps(
                    service=service, trainer=trainer, engine=engine, push=push, cfg=cfg,
                    budget=preset.rollout.timeout_sec, steps=steps,
                    sampler=sampler, engine_activity=timed.activity,
                    on_step=lambda a: emit(_record(a.step, a.results, a.batch_report, a.metrics, a.seconds,
                                                   a.engine_idle_seconds, a.trainer_idle_seconds, a.staleness,
                                                   "async")),
                )
            else:
                def on_sync_step(done: SyncStep) -> None:
                    done.metrics.update({k: v for k, v in done.stale.as_metrics().items()
                                         if k.startswith(("staleness_", "spanning_t"))})
                    done.metrics["solved_tasks"] = float(len(sampler.solved))
                    span = done.pushed - done.began
                    emit(_record(done.step, done.results, done.report, done.metrics, span,
                                 max(0.0, span - timed.activity.busy(done.began, done.pushed)),
                                 max(0.0, span - (done.pushed - done.rollouts_done)), done.stale, "sync"))
                    timed.activity.forget_before(done.began)

                await sync_steps(service=service, trainer=trainer, engine=engine, sync=sync, cfg=cfg,
                                 sampler=sampler, steps=steps, gate=gate, on_step=on_sync_step)
        if steps and not any(r.updates for r in records):
            zero = sum(r.zero_variance_groups for r in records)
            groups = sum(r.groups for r in records)
            raise NoLearningSignal(
                f"GRPO made 0 optimiser updates in {len(records)} steps: {zero} of {groups} groups had zero reward "
                f"variance and {sum(r.overlong_dropped for r in records)} samples exceeded the window; the policy "
                "is unchanged (raise train.group_size or use tasks the policy solves sometimes)")
        checkpoint = trainer.save_checkpoint(out / "checkpoint")
        trainer.finish("completed", {"final_reward_mean": records[-1].reward_mean if records else None})
    except BaseException:
        trainer.finish("failed")
        raise
    finally:
        await engine.aclose()
        db.dispose()
    png = curves_png(
        {
            "reward": [(r.step, r.reward_mean) for r in records],
            "success_rate": [(r.step, r.success_rate) for r in records],
            "episode_length_calls": [(r.step, r.episode_calls) for r in records],
        },
        out / "rl_curves.png",
        title=f"GRPO ({preset.name})",
    )
    return RLReport(run_id=run_id, preset=preset.name, steps=records, checkpoint=str(checkpoint),
                    curve_png=str(png), seconds=time.perf_counter() - t0)


@dataclasses.dataclass
class SyncStep:
    """One synchronous step: its rollouts, batch report and trainer metrics, and its phase
    clock (``time.perf_counter``). A step runs from :attr:`began` (the previous step's weights
    are in the engine, or the run starts) to :attr:`pushed` (its own are)."""

    step: int
    results: list[RolloutResult]
    report: BatchReport
    stale: StalenessReport
    metrics: dict[str, float]
    began: float
    #: when this step's rollouts were started: before :attr:`began` when they started early,
    #: while the previous step trained (``train.prestart_rollouts``)
    rollouts_started: float
    rollouts_done: float
    built: float  # calls read back and the GRPO batch built
    trained: float  # the optimiser step done (= built when no sample carried a signal)
    pushed: float  # the new weights in the engine; the next step's calls released


async def sync_steps(*, service: Any, trainer: Any, engine: Any, sync: WeightSync, cfg: Any, sampler: TaskSampler,
                     steps: int, gate: CallGate, on_step: Callable[[SyncStep], None]) -> None:
    """``steps`` synchronous GRPO steps: roll out a batch of task groups, build the batch,
    update, push the weights.

    With ``cfg.prestart_rollouts`` the next step's rollouts start as soon as this step's have
    finished (its task draw follows this step's results, as without), and ``gate`` stays
    closed while the trainer steps and pushes: the sandboxes and harnesses start beside the
    optimiser step, and their first model calls wait for the new weights. Every call is
    sampled by the current policy either way (the step checks the recorded versions). A
    cancel or an error cancels the started rollouts (the scheduler removes their sandboxes)."""
    prestart = bool(cfg.prestart_rollouts)

    def start(step: int) -> asyncio.Task[list[RolloutResult]]:
        batch = sampler.draw(cfg.train_batch_size)
        return asyncio.ensure_future(service.run_groups(batch, cfg.group_size, role="train", tag=f"s{step}"))

    began = started = time.perf_counter()
    pending: asyncio.Task[list[RolloutResult]] | None = start(1) if steps > 0 else None
    try:
        for step in range(1, steps + 1):
            assert pending is not None
            results = await pending
            pending = None
            done = time.perf_counter()
            sampler.observe(results)
            next_started = 0.0
            if prestart and step < steps:
                gate.close()
                pending = start(step + 1)
                next_started = time.perf_counter()
            # the batch's DB reads and the optimiser step run in the trainer thread: the event
            # loop keeps serving whatever else shares it (the next rollouts, an evaluation, the proxy)
            report, stale, metrics, built = await in_thread(_sync_step, service, results, trainer, engine, cfg)
            trained = time.perf_counter()
            if metrics.get("updated"):
                await sync.push(trainer, engine)
                metrics["weight_sync_seconds"] = time.perf_counter() - trained
            pushed = time.perf_counter()
            gate.open()
            if pending is None and step < steps:
                pending = start(step + 1)
                next_started = pushed
            on_step(SyncStep(step=step, results=results, report=report, stale=stale, metrics=metrics, began=began,
                             rollouts_started=started, rollouts_done=done, built=built, trained=trained, pushed=pushed))
            began, started = pushed, next_started
    finally:
        gate.open()
        if pending is not None:  # an error or a cancel: the early-started rollouts go too, their
            pending.cancel()      # sandboxes removed, waited for through any further cancels
            await outlast(asyncio.gather(pending, return_exceptions=True))
            db, run_id = getattr(service, "db", None), getattr(service, "run_id", None)
            if db is not None and run_id:
                n, _ = await thread_outcome(mark_unfinished_cancelled, db, run_id, "sync rollouts started early")
                if n:
                    log.info("%d early-started rollout(s) of run %s marked cancelled", n, run_id)


def _sync_step(service: Any, results: Sequence[Any], trainer: Any, engine: Any, cfg: Any
               ) -> tuple[Any, StalenessReport, dict[str, float], float]:
    """One synchronous step after its rollouts: the recorded calls → GRPO batch → one update
    (none when no sample carries a signal); also when the batch was built (``perf_counter``).
    Blocking (DB reads, the optimiser): run it off the loop."""
    items = service.recorded(results)
    # sync: every call was sampled by the current weights (measured, not assumed)
    _, stale = filter_stale(items, int(engine.policy_version or 0), StalenessPolicy.from_train(cfg))
    samples, report = grpo_batch(items, cfg, trainer.tokenizer)
    built = time.perf_counter()
    metrics: dict[str, float] = {}
    if any(s.advantage != 0.0 for s in samples) or cfg.kl_coef or cfg.entropy_coef:
        metrics = trainer.step(samples)
    return report, stale, metrics, built


def _record(step: int, results: Sequence[Any], report: Any, metrics: dict[str, float], seconds: float,
            engine_idle: float, trainer_idle: float, stale: StalenessReport, mode: str) -> StepRecord:
    trainable = [r for r in results if r.trainable]
    return StepRecord(
        step=step, reward_mean=mean_reward(results),
        success_rate=sum((r.reward or 0) >= FULL_REWARD for r in trainable) / max(1, len(trainable)),
        episode_calls=sum(r.n_calls for r in results) / max(1, len(results)),
        outcomes=outcome_counts(results), groups=report.groups.n_groups,
        zero_variance_groups=report.zero_variance_groups, samples=int(metrics.get("samples", 0)),
        overlong_dropped=int(metrics.get("overlong_dropped", 0)),
        updates=int(metrics.get("updates", 0)) if metrics.get("updated") else 0,
        metrics={**metrics, **report.as_metrics()}, seconds=seconds,
        engine_idle_seconds=engine_idle, trainer_idle_seconds=trainer_idle,
        staleness={k: v for k, v in sorted(stale.histogram.items())},
        stale_dropped=stale.dropped_calls if mode == "async" else 0,
        stale_corrected=stale.corrected_calls if mode == "async" else 0,
        spanning=stale.spanning_trajectories, spanning_dropped=stale.spanning_dropped if mode == "async" else 0,
        mode=mode,
    )


class WeightSync:
    """How a step's new weights reach the engine; afterwards the engine's policy version is
    the trainer's optimiser step (what every later call records)."""

    async def push(self, trainer: Any, engine: Any) -> None:  # in place: the in-process engine
        await in_thread(trainer.push_weights, engine)  # under the engine's weights lock: not on the loop

    async def push_under_rollouts(self, trainer: Any, engine: Any, gated: GatedEngine) -> None:
        """The same while rollouts keep calling (the asynchronous loop). The in-process engine
        swaps weights under its own lock, between decode steps; a call that spans the swap
        records both versions (``training.trajectory.staleness``)."""
        await self.push(trainer, engine)


class CheckpointReload(WeightSync):
    """vLLM: save an HF checkpoint under ``root/step-N`` and have the server reload it
    (``engine.weight_sync``: restart, or vLLM's RPC reload); the start weights (step-0) and
    the newest are kept. Saved with a tied output head untied (``trainer.save_untied``: vLLM's
    reload would leave the head of the start weights in place on CPU)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.last: Path | None = None

    async def push(self, trainer: Any, engine: Any) -> None:
        path = await self._save(trainer)
        await engine.reload_weights(path, version=trainer.global_step)
        await self._forget_older(path)

    async def push_under_rollouts(self, trainer: Any, engine: Any, gated: GatedEngine) -> None:
        """Save while rollouts go on; then hold new calls at the gate, let the server finish
        the calls it has (a reload under a running call would sample one call with two sets of
        weights, recorded as one version), reload, and let the held calls through."""
        path = await self._save(trainer)
        await gated.pause()
        try:
            await engine.reload_weights(path, version=trainer.global_step)
        finally:
            gated.resume()
        await self._forget_older(path)

    async def _save(self, trainer: Any) -> Path:
        return await in_thread(trainer.save_checkpoint, self.root / f"step-{trainer.global_step}", untie_embeddings=True)

    async def _forget_older(self, path: Path) -> None:
        import shutil

        if self.last is not None and self.last != path and self.last.name != "step-0":
            await in_thread(shutil.rmtree, self.last, ignore_errors=True)
        self.last = path


async def _policy(preset: Preset, kind: str, model_path: str | Path | None, out: Path, db: Any,
                  run_id: str) -> tuple[Any, Any, WeightSync]:
    """``(engine, trainer, weight sync)`` of a local-trainer run."""
    import torch

    from training.engines.model_store import resolve_model
    from training.trainers.local import LocalTrainer
    from training.trainers.local.trainer import load_policy_model

    cfg = preset.train
    source = resolve_model(str(model_path) if model_path else preset.engine.model_path)
    if kind == "local":
        # synchronous steps: the engine decodes while the trainer waits and vice versa, so
        # the engine takes every core (a GRPO step's generation 23.7 -> 16.2 s on 2 cores, issue 13's note)
        engine = local_engine(preset, model_path, alternates_with_trainer=not cfg.async_rollouts)
        if engine.dtype == torch.float32:
            model = engine_model_copy(engine)
        else:  # a bf16 engine's weights are rounded: the trainer's float32 master weights come from disk
            model = load_policy_model(source, preset.engine.context_length)
        trainer = LocalTrainer(model, engine.tokenizer, cfg, device=preset.engine.device,
                               db_engine=db, run_id=run_id, in_process_engine=True)
        return engine, trainer, WeightSync()
    trainer = LocalTrainer.from_pretrained(source, cfg, device=preset.engine.device, db_engine=db, run_id=run_id,
                                           in_process_engine=False,
                                           context_length=getattr(preset.engine, "context_length", None))
    sync = CheckpointReload(out / "weights")
    # the server starts on the trainer's own step-0 weights and config (the default model's
    # context extension included), so engine and trainer score tokens with one model
    start = trainer.save_checkpoint(sync.root / "step-0", untie_embeddings=True)  # trainer.save_untied: why
    sync.last = start
    engine = await vllm_engine(preset, start, log_dir=out)
    # attached: it must see this run's files and serve this model's config (a reload changes
    # weights only, not e.g. the positional encoding); bring it onto the start weights
    if preset.engine.url:
        await engine.reload_weights(start, version=0)
    return engine, trainer, sync


def engine_model_copy(engine: Any) -> Any:
    """A trainable copy of the engine's model (the engine keeps serving its own copy)."""
    import copy

    model = copy.deepcopy(engine.model)
    model.float()
    for p in model.parameters():
        p.requires_grad_(True)
    return model
