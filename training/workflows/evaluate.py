"""Evaluation of a checkpoint: pass@k / pass^k per harness and behaviour analysis."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from environments.records import RolloutResult
from environments.taskdir import TaskDir
from openforge.presets import Preset
from training.evaluation.behaviour import Trajectory as BehaviourTrajectory
from training.evaluation.behaviour import capabilities, tool_usage
from training.evaluation.passk import Outcome, score
from training.memory import release_freed_memory
from training.workflows.common import outcome_counts, policy_engine, rollout_service

if TYPE_CHECKING:
    from training.workflows.service import ProgressFn


class HarnessEval(BaseModel):
    harness: str
    tasks: int
    samples: int
    mean_reward: float
    #: Standard error of the mean over the scored rollouts (sample sd / sqrt(n)).
    stderr: float = 0.0
    pass_at: dict[int, float]
    pass_hat: dict[int, float]
    outcomes: dict[str, int]
    #: Mean of each verifier metric (every numeric key of reward.json: ``reward``, our
    #: ``check.<name>`` 1/0, a Harbor task's own) over the scored rollouts that report it.
    metrics: dict[str, float] = Field(default_factory=dict)


class EvalReport(BaseModel):
    label: str
    model: str | None
    harnesses: list[HarnessEval]
    capabilities: dict[str, float]
    tool_usage: dict[str, int]
    per_task_reward: dict[str, float]
    seconds: float

    @property
    def mean_reward(self) -> float:
        return sum(h.mean_reward for h in self.harnesses) / len(self.harnesses) if self.harnesses else 0.0

    @property
    def stderr(self) -> float:
        """Standard error of :attr:`mean_reward` (harnesses independent)."""
        k = len(self.harnesses)
        return math.sqrt(sum(h.stderr**2 for h in self.harnesses)) / k if k else 0.0

    @property
    def samples(self) -> int:
        return sum(h.samples for h in self.harnesses)


#: Fewest shared held-out tasks for a paired gain: its SE is estimated from the T differences,
#: and with T − 1 ≥ 19 degrees of freedom "2 SE" stays within 5 % of the two-sided 95 % t
#: bound (2.09 at 19); with fewer, one lucky pair of tasks could make the SE 0.
MIN_PAIRED_TASKS = 20


class Gain(BaseModel):
    """One checkpoint's held-out gain over another's on the same tasks (:func:`gain_over`)."""

    gain: float
    #: Standard error of :attr:`gain`.
    se: float
    #: Held-out tasks scored in both evaluations: the pairs the gain is a mean over (0: the
    #: evaluations shared fewer than :data:`MIN_PAIRED_TASKS`, and the gain is unpaired).
    paired_tasks: int

    @property
    def clear(self) -> bool:
        """Up by more than twice its standard error."""
        return self.gain > 2 * self.se


def gain_over(before: EvalReport, after: EvalReport) -> Gain:
    """The gain of ``after`` over ``before``, paired by held-out task.

    Both evaluations ran the same held-out tasks, so the unit they share is the task: Δ_t =
    ``after``'s mean reward on task t − ``before``'s, over the tasks scored in both; gain = mean
    Δ_t, SE = sd(Δ_t) / √T. A task's own difficulty cancels out of Δ_t, and rollouts of one
    task count as one sample of the family, not as independent ones. (√(SE_a² + SE_b²) over
    rollouts would treat the two evaluations as independent draws of tasks and rollouts.) With
    fewer than :data:`MIN_PAIRED_TASKS` shared tasks the gain is unpaired: the difference of
    the means with that SE.
    """
    shared = sorted(set(before.per_task_reward) & set(after.per_task_reward))
    if len(shared) < MIN_PAIRED_TASKS:
        return Gain(gain=after.mean_reward - before.mean_reward, se=math.hypot(before.stderr, after.stderr),
                    paired_tasks=0)
    diffs = [after.per_task_reward[t] - before.per_task_reward[t] for t in shared]
    return Gain(gain=sum(diffs) / len(diffs), se=standard_error(diffs), paired_tasks=len(shared))


def _tool_names(task: TaskDir) -> list[str]:
    if not task.tools_file.is_file():
        return []
    data = json.loads(task.tools_file.read_text(encoding="utf-8"))
    tools = data.get("tools", []) if isinstance(data, dict) else data
    return [t["name"] for t in tools if isinstance(t, dict) and "name" in t]


async def evaluate(
    preset: Preset,
    tasks: Sequence[TaskDir],
    *,
    model_path: str | Path | None = None,
    harnesses: Sequence[str] = ("react",),
    k: int = 1,
    n: int | None = None,
    label: str = "model",
    run_id: str | None = None,
    progress: ProgressFn | None = None,
) -> EvalReport:
    """``n`` (default ``k``) rollouts per task and harness with the preset's engine
    (:func:`training.workflows.common.policy_engine`: in-process, vLLM or a URL);
    ``progress`` is called with each rollout's result as it ends."""
    t0 = time.perf_counter()
    n = max(n or k, k)
    run_id = run_id or f"eval-{label}-{int(time.time())}"  # one run for every harness's rollouts
    engine = await policy_engine(preset, model_path, "evaluate")
    outcomes: list[Outcome] = []
    trajectories: list[BehaviourTrajectory] = []
    per_harness_outcomes: dict[str, dict[str, int]] = {}
    per_harness_metrics: dict[str, dict[str, float]] = {}
    tools_by_task = {t.id: _tool_names(t) for t in tasks}
    try:
        for harness in harnesses:
            async with rollout_service(preset, engine, harness=harness, refill=False, run_id=run_id) as service:
                results = await service.run_groups(tasks, n, role="eval", tag=harness, progress=progress)
                calls = service.calls_of(results)
            per_harness_outcomes[harness] = outcome_counts(results)
            per_harness_metrics[harness] = metric_means(results)
            for r in results:
                outcomes.append(Outcome(r.task_id or "?", harness, (r.reward or 0.0) if r.trainable else None))
                if r.trainable:
                    trajectories.append(BehaviourTrajectory(r.task_id or "?", r.reward or 0.0, calls.get(r.rollout_id, []),
                                                            tools_by_task.get(r.task_id or "", [])))
    finally:
        await engine.aclose()
        release_freed_memory()  # the engine's KV caches and weights, before the next stage allocates
    table = [
        HarnessEval(harness=s.harness, tasks=s.tasks, samples=s.samples, mean_reward=s.mean_reward,
                    stderr=standard_error([o.reward for o in outcomes if o.harness == s.harness and o.reward is not None]),
                    pass_at=s.pass_at, pass_hat=s.pass_hat, outcomes=per_harness_outcomes.get(s.harness, {}),
                    metrics=per_harness_metrics.get(s.harness, {}))
        for s in score(outcomes, ks=range(1, k + 1))
    ]
    per_task: dict[str, list[float]] = {}
    for o in outcomes:
        if o.reward is not None:
            per_task.setdefault(o.task_id, []).append(o.reward)
    return EvalReport(
        label=label, model=str(model_path) if model_path else None, harnesses=table,
        capabilities=capabilities(trajectories), tool_usage=dict(tool_usage(trajectories).most_common()),
        per_task_reward={t: sum(v) / len(v) for t, v in sorted(per_task.items())}, seconds=time.perf_counter() - t0,
    )


def metric_means(results: Sequence[RolloutResult]) -> dict[str, float]:
    """Each verifier metric's mean over the scored (trainable) rollouts that report it, by name."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in results:
        if not r.trainable:
            continue
        for name, value in r.metrics.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sorted(sums)}


def standard_error(values: Sequence[float]) -> float:
    """sd / sqrt(n) with the unbiased sd; 0 for fewer than two values."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def compare_png(reports: Sequence[EvalReport], path: str | Path) -> Path:
    """Radar chart of the five capabilities for several evaluated checkpoints."""
    from training.evaluation.behaviour import radar_png

    return radar_png({r.label: r.capabilities for r in reports}, path, title="Behaviour: capabilities")


def summary_rows(reports: Sequence[EvalReport]) -> list[dict[str, Any]]:
    """One row per checkpoint and harness; ``metrics`` holds each verifier metric's mean
    (``reward`` left out: it is ``mean_reward``'s column)."""
    rows = []
    for r in reports:
        for h in r.harnesses:
            rows.append({"checkpoint": r.label, "harness": h.harness, "tasks": h.tasks, "samples": h.samples,
                         "mean_reward": round(h.mean_reward, 4), "stderr": round(h.stderr, 4),
                         **{f"pass@{k}": round(v, 4) for k, v in h.pass_at.items()},
                         **{f"pass^{k}": round(v, 4) for k, v in h.pass_hat.items()},
                         "metrics": {name: round(v, 4) for name, v in h.metrics.items() if name != "reward"}})
    return rows
