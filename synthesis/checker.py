"""How synthesis asks "what reward does harness H get on this task?" without knowing how.

:class:`TaskChecker` is the one seam between synthesis and rollouts (synthesis never
imports ``training/``): every check — the ``oracle`` (the task's ``solution/solve.sh``), the
``noop`` agent and test-model harnesses — is a rollout on the real path (the in-sandbox
runner in a sandbox, the task's verifier), which the tasks layer injects as a
:data:`RolloutFn` (``tasks.synthesis.sandbox_rollouts``) into a :class:`RolloutChecker`.
Synthesis itself never runs a task's scripts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

ORACLE, NOOP = "oracle", "noop"


class CheckOutcome(BaseModel):
    """The result of one check rollout of a task."""

    harness: str
    reward: float | None = None
    status: str = "ok"  # ok | policy_error | infra_error | timeout (as RolloutResult)
    error: str | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    cost_usd: float = 0.0
    rollout_id: str | None = None
    log_path: str | None = None
    transcript_path: str | None = None

    @classmethod
    def from_rollout(cls, harness: str, doc: dict[str, Any]) -> CheckOutcome:
        """The outcome of a rollout document (``RolloutResult`` as JSON: status, reward,
        checks, seconds, rollout_id, logs_dir)."""
        return cls(harness=harness, reward=doc.get("reward"), status=doc.get("status", "infra_error"),
                   error=doc.get("error"), checks=doc.get("checks") or {}, seconds=doc.get("seconds", 0.0),
                   rollout_id=doc.get("rollout_id"), log_path=doc.get("logs_dir"))


@runtime_checkable
class TaskChecker(Protocol):
    """Runs ``harness`` (``oracle``, ``noop`` or a test-model harness) on a task dir."""

    async def check(self, task_dir: Path, harness: str) -> CheckOutcome:
        ...


RolloutFn = Callable[[Path, str], Awaitable[CheckOutcome]]


class RolloutChecker:
    """A :class:`TaskChecker` whose every check, whatever the harness, is ``rollout(task_dir, harness)``."""

    def __init__(self, rollout: RolloutFn) -> None:
        self.rollout = rollout

    async def check(self, task_dir: Path, harness: str) -> CheckOutcome:
        return await self.rollout(Path(task_dir), harness)
