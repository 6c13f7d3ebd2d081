"""Small pieces the workflows share: task selection, engines from presets, outcome counts."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.records import RolloutResult
from environments.taskdir import TaskDir, load_task
from openforge.presets import Preset


def load_tasks(dirs: Sequence[str | Path]) -> list[TaskDir]:
    return [load_task(d) for d in dirs]


def sample_tasks(tasks: Sequence[TaskDir], n: int, rng: random.Random) -> list[TaskDir]:
    """``n`` tasks, cycling through a shuffled order so every task comes up evenly."""
    if not tasks:
        raise ValueError("no tasks to sample from")
    order = list(tasks)
    out: list[TaskDir] = []
    while len(out) < n:
        rng.shuffle(order)
        out.extend(order[: n - len(out)])
    return out


def local_engine(preset: Preset, model_path: str | Path | None) -> Any:
    """The in-process policy engine for ``model_path`` (default model when None)."""
    from training.engines.local import LocalEngine  # noqa: PLC0415 - loads torch

    return LocalEngine(
        str(model_path) if model_path else None,
        device=preset.engine.device,
        max_batch_size=preset.engine.max_batch,
        seed=preset.train.seed,
    )


def harness_options(preset: Preset) -> dict[str, Any]:
    """Adapter options from the preset; they carry its generation budget, which
    :class:`training.workflows.service.RolloutService` also applies at the proxy."""
    options = dict(preset.section("harness_options"))
    options.setdefault("max_tokens", preset.rollout.max_tokens)
    if preset.rollout.max_total_tokens is not None:
        options.setdefault("max_total_tokens", preset.rollout.max_total_tokens)
    options.setdefault("temperature", preset.rollout.temperature)
    return options


def outcome_counts(results: Sequence[RolloutResult]) -> dict[str, int]:
    counts = Counter(r.status.value for r in results)
    counts.update(f"{r.status.value}/{r.error_kind}" for r in results if r.error_kind)
    return dict(counts)


def mean_reward(results: Sequence[RolloutResult]) -> float:
    usable = [r.reward or 0.0 for r in results if r.trainable]
    return sum(usable) / len(usable) if usable else 0.0
