"""The command that launches veRL's GRPO for a preset (no veRL import: a dry run prints it).

``python -m training.trainers.verl.main KEY=VALUE ...`` — our driver (see
:mod:`training.trainers.verl.main`), which registers the ``openforge_grpo`` estimator and the
agent loop, writes the task-bank dataset, and then hands the config to veRL's own
``verl.trainer.main_ppo`` entry. Every ``KEY=VALUE`` is a hydra override of veRL's
``ppo_trainer`` config (:func:`training.trainers.verl.config.verl_overrides`), so the printed
command is also what a user runs by hand.

Files of a run, under ``run_dir/verl/``: ``train.parquet`` (one row per task: ``prompt``
and ``extra_info.task_id``), ``agent_loop.yaml`` (veRL's agent-loop registry entry).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openforge.presets import Preset
from training.trainers.verl.config import to_hydra_overrides, verl_overrides

DRIVER_MODULE = "training.trainers.verl.main"


def verl_files(run_dir: str | Path) -> dict[str, Path]:
    """Where a run's veRL inputs live."""
    base = Path(run_dir) / "verl"
    return {"train_files": base / "train.parquet", "agent_loop_config_path": base / "agent_loop.yaml",
            "checkpoints": base / "checkpoints"}


def verl_command(preset: Preset, *, model: str, run_dir: str | Path, n_gpus_per_node: int = 1,
                 python: str | None = None) -> list[str]:
    """argv of the veRL GRPO run of ``preset`` on ``model``."""
    files = verl_files(run_dir)
    values = verl_overrides(
        preset, model_path=model, train_files=str(files["train_files"]), val_files=str(files["train_files"]),
        agent_loop_config_path=str(files["agent_loop_config_path"]), n_gpus_per_node=n_gpus_per_node,
        nnodes=preset.train.nnodes,
    )
    values.setdefault("trainer", {}).setdefault("default_local_dir", str(files["checkpoints"]))
    return [python or sys.executable, "-m", DRIVER_MODULE, *to_hydra_overrides(values)]
