"""Prefect tasks of the learning loop: distill, SFT, GRPO, evaluate (each a plain workflow).

Each returns its workflow's typed report (pydantic), which Prefect persists as JSON under a
content key (:mod:`tasks.cache`): a re-run with the same tasks, checkpoint and preset keys
reuses the report instead of running the stage again. Wall-clock ceilings come from the
preset (:mod:`tasks.budgets`); the flow sets them per call with ``with_options``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect import get_run_logger, task

from openforge.presets import load_preset
from tasks.cache import note_reuse
from tasks.retry import infra_only
from tasks.stage_keys import DISTILL_KEY, EVALUATE_KEY, RL_KEY, SFT_KEY
from training.workflows.common import load_tasks

if TYPE_CHECKING:
    from training.workflows.distill import DistillReport
    from training.workflows.evaluate import EvalReport
    from training.workflows.rl import RLReport
    from training.workflows.sft import SFTReport


@task(name="distill", retries=1, retry_condition_fn=infra_only, cache_policy=DISTILL_KEY, result_serializer="json",
      on_completion=[note_reuse])
async def distill_task(preset: str, overrides: dict, task_dirs: list[str], teacher: str, n_per_task: int | None,
                       model_path: str | None = None) -> DistillReport:
    from training.workflows.distill import distill

    report = await distill(load_preset(preset, overrides), load_tasks(task_dirs), teacher=teacher,
                           n_per_task=n_per_task, model_path=model_path)
    return report


@task(name="sft-train", cache_policy=SFT_KEY, result_serializer="json", on_completion=[note_reuse])
def sft_task(preset: str, overrides: dict, data: str, model_path: str | None = None) -> SFTReport:
    from training.workflows.sft import sft_train

    logger = get_run_logger()
    report = sft_train(load_preset(preset, overrides), data, model_path=model_path,
                       on_update=lambda i, m: logger.info("sft update %d loss %.4f", i, m.get("loss", 0.0)))
    return report


@task(name="rl-train", cache_policy=RL_KEY, result_serializer="json", on_completion=[note_reuse])
async def rl_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, steps: int | None) -> RLReport:
    from training.workflows.rl import rl_train

    logger = get_run_logger()
    report = await rl_train(
        load_preset(preset, overrides), load_tasks(task_dirs), model_path=model_path, steps=steps,
        on_step=lambda r: logger.info("rl step %d reward %.3f samples %d outcomes %s", r.step, r.reward_mean, r.samples, r.outcomes),
    )
    return report


@task(name="evaluate", retries=1, retry_condition_fn=infra_only, cache_policy=EVALUATE_KEY, result_serializer="json",
      on_completion=[note_reuse])
async def evaluate_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, label: str,
                        harnesses: list[str], k: int, n: int | None = None) -> EvalReport:
    from training.workflows.evaluate import evaluate

    report = await evaluate(load_preset(preset, overrides), load_tasks(task_dirs), model_path=model_path,
                            harnesses=harnesses, k=k, n=n, label=label)
    return report
