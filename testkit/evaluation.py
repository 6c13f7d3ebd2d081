"""Hand-built :class:`~training.workflows.evaluate.EvalReport` records: per-task rewards in,
the report an evaluation of those rollouts would return (one react harness)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from training.workflows.evaluate import EvalReport, HarnessEval, standard_error


def eval_report(rewards_by_task: Mapping[str, Sequence[float]], label: str = "model") -> EvalReport:
    """The report of rollouts scored ``rewards_by_task[task]`` (mean and SE over rollouts,
    each task's mean in ``per_task_reward``)."""
    rewards = [r for task_rewards in rewards_by_task.values() for r in task_rewards]
    harness = HarnessEval(harness="react", tasks=len(rewards_by_task), samples=len(rewards),
                          mean_reward=sum(rewards) / len(rewards), stderr=standard_error(rewards),
                          pass_at={}, pass_hat={}, outcomes={"ok": len(rewards)})
    return EvalReport(label=label, model=None, harnesses=[harness], capabilities={}, tool_usage={},
                      per_task_reward={t: sum(v) / len(v) for t, v in rewards_by_task.items()}, seconds=0.0)
