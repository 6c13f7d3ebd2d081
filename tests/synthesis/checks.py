"""The synthesis tests' checker: oracle and no-op checks on the real rollout path (the runner
in a local sandbox, :func:`tasks.synthesis.sandbox_rollouts`), any other harness through
``model`` (a scripted stand-in for test-model rollouts) when one is given."""

from __future__ import annotations

from pathlib import Path

from synthesis.checker import NOOP, ORACLE, CheckOutcome, RolloutChecker, RolloutFn
from tasks.synthesis import sandbox_rollouts


def sandbox_checker(model: RolloutFn | None = None) -> RolloutChecker:
    real = sandbox_rollouts("local", None)

    async def rollout(task_dir: Path, harness: str) -> CheckOutcome:
        if harness in (ORACLE, NOOP) or model is None:
            return await real(task_dir, harness)
        return await model(task_dir, harness)

    return RolloutChecker(rollout)
