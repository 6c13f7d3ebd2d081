"""The rollout workflows report each rollout as it ends (what progress bars and Prefect
progress artifacts count), not only when the whole stage returns."""

from __future__ import annotations

import asyncio
from pathlib import Path

from environments.records import RolloutResult

EXAMPLES = Path(__file__).resolve().parents[2] / "environments" / "claw" / "examples"


def test_distill_calls_progress_once_per_teacher_rollout_as_each_ends(openforge_home: Path, tiny_policy: Path) -> None:
    from openforge.presets import load_preset
    from training.workflows.common import load_tasks
    from training.workflows.distill import distill

    tasks = load_tasks(sorted(str(p) for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())[:2])
    seen: list[RolloutResult] = []
    report = asyncio.run(distill(load_preset("local", {"rollout.concurrency": 2}), tasks, teacher="oracle",
                                 n_per_task=2, progress=seen.append))
    assert report.rollouts == 4
    assert len(seen) == 4 and all(isinstance(r, RolloutResult) for r in seen)
    assert sorted(r.task_id for r in seen) == sorted(t.id for t in tasks for _ in range(2))
