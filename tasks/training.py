"""Prefect tasks of the learning loop: distill, SFT, GRPO, evaluate (each a plain workflow).

Each returns its workflow's typed report (pydantic), which Prefect persists as JSON under a
content key (:mod:`tasks.cache`): a re-run with the same tasks, checkpoint and preset keys
reuses the report instead of running the stage again. Wall-clock ceilings come from the
preset (:mod:`tasks.budgets`); the flow sets them per call with ``with_options``. Each reports
its progress (:mod:`tasks.progress`): rollouts ended (distill, evaluate), SFT updates, GRPO steps."""

from __future__ import annotations

import asyncio
import math
import threading
from typing import TYPE_CHECKING

from prefect import task

from openforge.presets import load_preset
from tasks.cache import note_reuse
from tasks.progress import track
from tasks.retry import infra_only
from tasks.stage_keys import DISTILL_KEY, EVALUATE_KEY, RL_KEY, SFT_KEY
from training.workflows.common import load_tasks

if TYPE_CHECKING:
    from training.workflows.distill import DistillReport
    from training.workflows.evaluate import EvalReport
    from training.workflows.reports import RLReport
    from training.workflows.sft import SFTReport


@task(name="distill", retries=1, retry_condition_fn=infra_only, cache_policy=DISTILL_KEY, result_serializer="json",
      on_completion=[note_reuse])
async def distill_task(preset: str, overrides: dict, task_dirs: list[str], teacher: str, n_per_task: int | None,
                       model_path: str | None = None) -> DistillReport:
    from training.workflows.distill import distill

    loaded = load_preset(preset, overrides)
    tracker = track("distill", f"distill ({teacher} teacher)",
                    len(task_dirs) * (n_per_task or loaded.sft.teacher_rollouts), "rollouts")
    return await distill(loaded, load_tasks(task_dirs), teacher=teacher, n_per_task=n_per_task,
                         model_path=model_path, progress=lambda _result: tracker.advance())


class SFTStopped(RuntimeError):
    """SFT stopped between two updates because its task was cancelled or timed out."""


@task(name="sft-train", cache_policy=SFT_KEY, result_serializer="json", on_completion=[note_reuse])
async def sft_task(preset: str, overrides: dict, data: str, model_path: str | None = None) -> SFTReport:
    """SFT in a worker thread (the event loop keeps a sibling evaluation going). A timeout or a
    cancel ends the await at once and stops the training thread before its next update."""
    from training.workflows.sft import sft_train

    loaded = load_preset(preset, overrides)
    examples = sft_examples(data)
    updates = loaded.sft.epochs * math.ceil(examples / loaded.sft.batch_size) if examples else None
    tracker = track("sft", "SFT", updates, "updates")
    stop = threading.Event()

    def on_update(i: int, metrics: dict[str, float]) -> None:
        if stop.is_set():
            raise SFTStopped("sft-train: cancelled or past its timeout; stopped between two updates")
        tracker.update(i, note=f"loss {metrics.get('loss', 0.0):.4f}")

    try:
        report = await asyncio.to_thread(sft_train, loaded, data, model_path=model_path, on_update=on_update)
    finally:
        stop.set()
    tracker.update(report.updates, total=report.updates)
    return report


def sft_examples(data: str) -> int | None:
    """Rows (examples) of an SFT Parquet file from its footer; None when it cannot be read here."""
    try:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(data).metadata.num_rows)
    except Exception:  # noqa: BLE001 - a remote or unreadable file: the workflow reports it
        return None


@task(name="rl-train", cache_policy=RL_KEY, result_serializer="json", on_completion=[note_reuse])
async def rl_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, steps: int | None) -> RLReport:
    from training.workflows.rl import rl_train

    loaded = load_preset(preset, overrides)
    tracker = track("grpo", "GRPO", loaded.train.steps if steps is None else steps, "steps")

    def on_step(record) -> None:  # noqa: ANN001 - StepRecord (loads torch)
        tracker.advance(note=f"step {record.step}: reward {record.reward_mean:.3f}, "
                       f"{record.samples} samples, {record.updates} updates, outcomes {record.outcomes}")

    return await rl_train(loaded, load_tasks(task_dirs), model_path=model_path, steps=steps, on_step=on_step)


@task(name="evaluate", retries=1, retry_condition_fn=infra_only, cache_policy=EVALUATE_KEY, result_serializer="json",
      on_completion=[note_reuse])
async def evaluate_task(preset: str, overrides: dict, task_dirs: list[str], model_path: str | None, label: str,
                        harnesses: list[str], k: int, n: int | None = None) -> EvalReport:
    from training.workflows.evaluate import evaluate

    tracker = track(f"evaluate-{label}", f"evaluate {label}", len(task_dirs) * max(n or k, k) * len(harnesses),
                    "rollouts")
    return await evaluate(load_preset(preset, overrides), load_tasks(task_dirs), model_path=model_path,
                          harnesses=harnesses, k=k, n=n, label=label,
                          progress=lambda _result: tracker.advance())
