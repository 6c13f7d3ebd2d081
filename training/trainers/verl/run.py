"""``rl_train`` for ``train.trainer = 'verl'``: write the run's veRL inputs and launch the driver.

Under ``<run_dir>/verl/``: ``preset.json`` (the run's preset, overrides applied, as the
workers load it), ``train.parquet`` + ``tasks.json`` (:mod:`.dataset`),
``agent_loop.yaml`` (:func:`~.agent_loop.write_agent_loop_config`, rollout function
:data:`~.agent_loop.DEFAULT_ROLLOUT_FN`), ``driver.log``. The driver command is the
composition's (:func:`~.launch.verl_command`, with the model resolved); the environment
carries what :mod:`.rollout` reads in the Ray workers. veRL's console logger prints one
``step:N - key:value - ...`` line per step; those lines become the report's steps
(``critic/score/mean`` as the reward).

Not run on this project's CPU machines (it needs GPUs); scripts/gpu-smoke.sh is the command
for one GPU node.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.taskdir import TaskDir
from openforge.presets import Preset
from training.trainers.verl.agent_loop import write_agent_loop_config
from training.trainers.verl.dataset import write_dataset
from training.trainers.verl.launch import verl_command, verl_files
from training.workflows.reports import RLReport, StepRecord

STEP_LINE = re.compile(r"step:(\d+)\s+-\s+(.*)")


def parse_step_line(line: str) -> tuple[int, dict[str, float]] | None:
    """``(step, metrics)`` of one veRL console-logger line, else None."""
    match = STEP_LINE.search(line)
    if not match:
        return None
    metrics: dict[str, float] = {}
    for part in match.group(2).split(" - "):
        key, sep, value = part.partition(":")
        try:
            metrics[key.strip()] = float(value)
        except ValueError:
            continue
    return int(match.group(1)), metrics


def prepare_run(preset: Preset, tasks: Sequence[TaskDir], run_dir: Path, *, model: str, run_id: str,
                n_gpus_per_node: int) -> tuple[list[str], dict[str, str]]:
    """Write the inputs; return ``(argv, environment)`` of the driver."""
    files = verl_files(run_dir)
    tasks_json = files["train_files"].with_name("tasks.json")
    preset_json = files["train_files"].with_name("preset.json")
    preset_json.parent.mkdir(parents=True, exist_ok=True)
    preset_json.write_text(preset.model_dump_json(indent=1))
    write_dataset(tasks, files["train_files"], tasks_json)
    write_agent_loop_config(files["agent_loop_config_path"], gamma=preset.train.gamma)
    env = {**os.environ, "OPENFORGE_VERL_PRESET": str(preset_json), "OPENFORGE_VERL_TASKS": str(tasks_json),
           "OPENFORGE_VERL_RUN_ID": run_id}
    return verl_command(preset, model=model, run_dir=run_dir, n_gpus_per_node=n_gpus_per_node), env


async def run_verl(preset: Preset, tasks: Sequence[TaskDir], composition: Any, *, model_path: str | Path | None,
                   steps: int, run_id: str, out_dir: Path) -> Any:
    """Launch veRL's GRPO for ``steps`` steps; returns an :class:`~training.workflows.reports.RLReport`."""
    from training.engines.model_store import resolve_model  # noqa: PLC0415
    from training.workflows.compose import Host  # noqa: PLC0415

    t0 = time.perf_counter()
    model = resolve_model(str(model_path) if model_path else preset.engine.model_path)
    n_gpus = preset.train.n_gpus_per_node or Host.probe().gpus or 1
    if steps != preset.train.steps:
        preset = preset.model_copy(update={"train": preset.train.model_copy(update={"steps": steps})})
    argv, env = prepare_run(preset, tasks, out_dir, model=model, run_id=run_id, n_gpus_per_node=n_gpus)
    log_path = verl_files(out_dir)["train_files"].with_name("driver.log")
    records: list[Any] = []
    with log_path.open("w") as log_file:
        process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.STDOUT)
        assert process.stdout is not None
        async for raw in process.stdout:
            line = raw.decode("utf-8", "replace")
            log_file.write(line)
            parsed = parse_step_line(line)
            if parsed:
                step, metrics = parsed
                records.append(StepRecord(step=step, reward_mean=metrics.get("critic/score/mean", 0.0),
                                          success_rate=0.0, episode_calls=0.0, outcomes={}, groups=0,
                                          zero_variance_groups=0, samples=int(metrics.get("batch/num_samples", 0)),
                                          updates=1, metrics=metrics, seconds=metrics.get("timing_s/step", 0.0)))
        code = await process.wait()
    if code != 0:
        raise RuntimeError(f"veRL driver exited with {code}; see {log_path}")
    return RLReport(run_id=run_id, preset=preset.name, steps=records,
                    checkpoint=str(verl_files(out_dir)["checkpoints"]), curve_png=None, seconds=time.perf_counter() - t0)
