"""Prefect tasks of the learning loop: distill, SFT, GRPO, evaluate (each a plain workflow).

Each returns its workflow's typed report (pydantic), which Prefect persists as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect import get_run_logger, task

from openforge.presets import load_preset
from tasks.retry import infra_only
from training.workflows.common import load_tasks

if TYPE_CHECKING:
    from training.workflows.distill import DistillReport
    from training.workflows.evaluate import EvalReport
    from training.workflows.rl import RLReport
    from training.workflows.sft import SFTReport


@task(name="distill", retries=1, retry_condition_fn=infra_only)
async def distill_task(preset: str, overrides: dict, task_dirs: list[str], teacher: str, n_per_task: int | None,
                       model_path: str | None = None) -> DistillReport:
    from training.workflows.distill import distill

    report = await distill(load_preset(preset, overrides), load_tasks(task_dirs), teacher=teacher,
                           n_per_task=n_per_task, model_path=model_path)
    return report


@task(name="sft-train")
def sft_task(preset: str, overrides: dict, data: str, model_path: str | None = None) -> SFTReport:
    from training.workflows.sft import sft_train

    logger = get_run_logger()
    report = sft_train(load_preset(preset, overrides), data, model_path=model_path,
                       on_update=lambda i, m: logger.info("sft update %d loss %.4f", i, m.get("loss", 0.0)))
    return report


@task(name="rl-train")
async def rl_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, steps: int | None) -> RLReport:
    from training.workflows.rl import rl_train

    logger = get_run_logger()
    report = await rl_train(
        load_preset(preset, overrides), load_tasks(task_dirs), model_path=model_path, steps=steps,
        on_step=lambda r: logger.info("rl step %d reward %.3f samples %d outcomes %s", r.step, r.reward_mean, r.samples, r.outcomes),
    )
    return report


@task(name="evaluate", retries=1, retry_condition_fn=infra_only)
async def evaluate_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, label: str,
                        harnesses: list[str], k: int, n: int | None = None) -> EvalReport:
    from training.workflows.evaluate import evaluate

    report = await evaluate(load_preset(preset, overrides), load_tasks(task_dirs), model_path=model_path,
                            harnesses=harnesses, k=k, n=n, label=label)
    return report
