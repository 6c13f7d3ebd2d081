"""GRPO on the local engine + local trainer: roll out task groups, rebuild samples, update.

One step: sample ``train.train_batch_size`` tasks → G = ``train.group_size`` rollouts of
each through the real harness in sandboxes (the proxy records every call, with token ids
and logprobs from the engine) → one sample per call, ``r_t = γ^(T−t)·r_T``, group
advantages (zero-variance groups reported and skipped) → one optimiser step → the new
weights go into the engine in place (policy version bumps) → metrics to the DB.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from environments.taskdir import TaskDir
from openforge.presets import Preset
from openforge.settings import get_settings
from storage.db import make_engine
from training.trajectory import assign_group_advantages
from training.workflows.common import harness_options, local_engine, mean_reward, outcome_counts, sample_tasks
from training.workflows.plots import curves_png
from training.workflows.service import RolloutService

log = logging.getLogger(__name__)


class StepRecord(BaseModel):
    step: int
    reward_mean: float
    success_rate: float
    episode_calls: float
    outcomes: dict[str, int]
    groups: int
    zero_variance_groups: int
    samples: int
    metrics: dict[str, float] = Field(default_factory=dict)
    seconds: float


class RLReport(BaseModel):
    run_id: str
    preset: str
    steps: list[StepRecord]
    checkpoint: str | None
    curve_png: str | None
    seconds: float


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
    """Run GRPO for ``steps`` (default ``train.steps``); returns the per-step report."""
    from training.trainers.local import LocalTrainer  # noqa: PLC0415 - torch

    t0 = time.perf_counter()
    cfg = preset.train
    steps = cfg.steps if steps is None else steps
    run_id = run_id or f"rl-{int(time.time())}"
    out = Path(out_dir) if out_dir else get_settings().runs_dir / run_id
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg.seed)
    engine = local_engine(preset, model_path)
    db = make_engine(get_settings().db_url)
    trainer = LocalTrainer(engine_model_copy(engine), engine.tokenizer, cfg, device=preset.engine.device,
                           db_engine=db, run_id=run_id)
    records: list[StepRecord] = []
    try:
        async with RolloutService(
            engine, backend=preset.rollout.backend, harness=preset.rollout.harness,
            concurrency=preset.rollout.concurrency, refill=preset.rollout.max_refills if preset.rollout.refill else 0,
            timeout_sec=preset.rollout.timeout_sec, harness_options=harness_options(preset), run_id=run_id,
        ) as service:
            for step in range(1, steps + 1):
                s0 = time.perf_counter()
                batch = sample_tasks(tasks, cfg.train_batch_size, rng)
                results = await service.run_groups(batch, cfg.group_size, role="train", tag=f"s{step}")
                trajectories, _ = service.trajectories(results, gamma=cfg.gamma, tokenizer=engine.tokenizer)
                samples, groups = assign_group_advantages(trajectories, gamma=cfg.gamma)
                metrics: dict[str, float] = {}
                if samples:
                    metrics = trainer.step(samples)
                    trainer.push_weights(engine)
                record = StepRecord(
                    step=step, reward_mean=mean_reward(results),
                    success_rate=sum((r.reward or 0) >= 1.0 for r in results if r.trainable) / max(1, sum(r.trainable for r in results)),
                    episode_calls=sum(r.n_calls for r in results) / max(1, len(results)),
                    outcomes=outcome_counts(results), groups=groups.n_groups,
                    zero_variance_groups=len(groups.zero_variance_groups), samples=len(samples), metrics=metrics,
                    seconds=time.perf_counter() - s0,
                )
                if trainer.recorder is not None:
                    trainer.recorder.log(step, {"rollout_reward_mean": record.reward_mean,
                                                "rollout_success_rate": record.success_rate,
                                                "episode_calls": record.episode_calls,
                                                "zero_variance_groups": float(record.zero_variance_groups)})
                records.append(record)
                log.info("rl step %d: reward %.3f, %d samples", step, record.reward_mean, record.samples)
                if on_step is not None:
                    on_step(record)
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


def engine_model_copy(engine: Any) -> Any:
    """A trainable copy of the engine's model (the engine keeps serving its own copy)."""
    import copy  # noqa: PLC0415

    model = copy.deepcopy(engine.model)
    model.float()
    for p in model.parameters():
        p.requires_grad_(True)
    return model
