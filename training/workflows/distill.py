"""Distillation (SFT data): teacher rollouts through the same machinery, successes kept.

Each task is rolled out ``n_per_task`` times (3 by default, as in the paper) by a teacher
— any OpenAI-compatible URL, the local policy itself (rejection sampling), or the
``oracle`` teacher that replays each task's oracle solution in the policy's own tool-call
format (the offline default). The paper's filters then keep the shortest success per task,
collapse runs of >3 identical actions and drop trajectories with >5 identical actions; the
result is written as chat JSONL and token-level Parquet.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from environments.taskdir import TaskDir
from openforge.presets import Preset
from openforge.settings import get_settings
from training.trajectory import Trajectory
from training.trajectory.sft import (
    filter_sft_trajectories,
    sft_examples,
    sft_messages,
    write_sft_jsonl,
    write_sft_parquet,
)
from training.workflows.common import outcome_counts, policy_engine, rollout_service

if TYPE_CHECKING:
    from training.workflows.service import ProgressFn


class DistillReport(BaseModel):
    run_id: str
    teacher: str
    tasks: int
    rollouts: int
    outcomes: dict[str, int]
    kept_trajectories: int
    filters: dict[str, Any]
    examples: int
    jsonl: str
    parquet: str
    seconds: float


def canonical_order(trajectories: Sequence[Trajectory], tasks: Sequence[TaskDir]) -> list[Trajectory]:
    """``trajectories`` in the order of ``tasks``, then by their tokens: independent of the order
    the rollouts happened to finish in, so that the SFT data (and the seeded SFT shuffle over
    it) come out the same on every run with the same tasks and teacher."""
    position = {task.id: i for i, task in enumerate(tasks)}
    return sorted(trajectories, key=lambda t: (position.get(t.task_id or "", len(position)), t.task_id or "",
                                               [(s.prompt_ids, s.response_ids) for s in t.samples]))


async def _teacher_engine(teacher: str, preset: Preset, tasks: Sequence[TaskDir], tokenizer: Any, model_path: str | None) -> Any:
    if teacher == "oracle":
        from training.engines.oracle import OracleTeacherEngine  # noqa: PLC0415

        return OracleTeacherEngine.from_task_dirs([t.path for t in tasks], tokenizer)
    if teacher == "local":  # the preset's policy engine (in-process, vLLM or a URL)
        return await policy_engine(preset, model_path, "distill")
    if teacher.startswith(("http://", "https://")):
        from training.engines.openai_compat import OpenAICompatEngine  # noqa: PLC0415

        return OpenAICompatEngine(teacher)
    raise ValueError(f"teacher {teacher!r}: expected 'oracle', 'local' or an http(s) URL of an OpenAI-compatible server")


async def distill(
    preset: Preset,
    tasks: Sequence[TaskDir],
    *,
    teacher: str = "oracle",
    n_per_task: int | None = None,
    model_path: str | None = None,
    run_id: str | None = None,
    out_dir: str | Path | None = None,
    progress: ProgressFn | None = None,
) -> DistillReport:
    """Roll out the teacher, filter, export; returns where the SFT data went. ``progress`` is
    called with each teacher rollout's result as it ends."""
    from transformers import AutoTokenizer  # noqa: PLC0415

    from training.engines.model_store import resolve_model  # noqa: PLC0415

    t0 = time.perf_counter()
    n_per_task = n_per_task or preset.sft.teacher_rollouts
    run_id = run_id or f"distill-{int(time.time())}"
    out = Path(out_dir) if out_dir else get_settings().runs_dir / run_id
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(model_path))
    engine = await _teacher_engine(teacher, preset, tasks, tokenizer, model_path)
    try:
        async with rollout_service(preset, engine, run_id=run_id, refill=False,
                                   model=teacher if teacher != "local" else "policy") as service:
            results = await service.run_groups(tasks, n_per_task, role="teacher", progress=progress)
            trajectories, _ = service.trajectories(results, tokenizer=tokenizer)
            trajectories = canonical_order(trajectories, tasks)
    finally:
        await engine.aclose()
    kept, report = filter_sft_trajectories(
        trajectories, success_threshold=preset.sft.success_threshold,
        max_identical_run=preset.sft.max_identical_run, max_identical_actions=preset.sft.max_identical_actions,
        shortest_per_task=preset.sft.shortest_per_task,
    )
    jsonl = out / "sft.jsonl"
    parquet = out / "sft.parquet"
    write_sft_jsonl((sft_messages(t, max_identical_run=preset.sft.max_identical_run) for t in kept), jsonl)
    examples = [e for t in kept for e in sft_examples(t)]
    write_sft_parquet(examples, parquet)
    return DistillReport(
        run_id=run_id, teacher=teacher, tasks=len(tasks), rollouts=len(results), outcomes=outcome_counts(results),
        kept_trajectories=len(kept), filters={k: v for k, v in vars(report).items() if k != "dropped_rollouts"},
        examples=len(examples), jsonl=str(jsonl), parquet=str(parquet), seconds=time.perf_counter() - t0,
    )
