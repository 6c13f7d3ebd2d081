"""Records that cross rooms on the rollout path (DESIGN §5).

The runner inside a sandbox prints one :class:`RunnerReport` JSON line; the orchestrator
turns a sandbox's life into a :class:`RolloutResult`. Both are plain pydantic models so
they travel as JSON between processes, pods and the proxy.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class Outcome(str, Enum):
    ok = "ok"
    policy_error = "policy_error"
    infra_error = "infra_error"
    timeout = "timeout"


class ErrorKind(str, Enum):
    build_failed = "build_failed"
    start_failed = "start_failed"
    oom = "oom"
    harness_crash = "harness_crash"
    harness_missing = "harness_missing"
    engine_error = "engine_error"
    verifier_error = "verifier_error"
    service_failed = "service_failed"
    image_pull = "image_pull"
    unschedulable = "unschedulable"
    evicted = "evicted"
    node_lost = "node_lost"
    deadline_exceeded = "deadline_exceeded"
    malformed_tool_call = "malformed_tool_call"
    context_overflow = "context_overflow"
    cancelled = "cancelled"
    storage_exceeded = "storage_exceeded"


#: Marker the runner prints before its one JSON report line on stdout.
RUNNER_REPORT_PREFIX = "OPENFORGE_RESULT "


class RunnerReport(BaseModel):
    """What the in-sandbox runner reports: to the proxy's finish endpoint and to stdout."""

    reward: float | None = None
    status: Outcome
    error_kind: str | None = None
    error: str | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    harness: str | None = None
    logs: str | None = None
    #: Where the harness ran (environments/runner/jail.py): userns | uid | none.
    agent_jail: str | None = None
    #: Every numeric key of the verifier's reward.json (Harbor's rewards dict).
    metrics: dict[str, float] = Field(default_factory=dict)


class RolloutSpec(BaseModel):
    """One rollout to run: a task directory, a harness, and where the policy is served."""

    rollout_id: str
    task_dir: str
    harness: str
    task_id: str | None = None
    group_id: str | None = None
    run_id: str | None = None
    role: str = "train"
    model: str = "policy"
    base_url: str | None = None  # proxy base URL for this rollout, ends in /v1
    token: str | None = None  # rollout token (the sandbox's only credential)
    finish_key: str | None = None  # the runner's key for its finish report (never the harness's)
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    harness_options: dict[str, Any] = Field(default_factory=dict)
    #: Sandbox size for this rollout when the run sets one (preset ``rollout.cpus`` /
    #: ``rollout.memory_mb``, e.g. the paper's pod sizes); None: the task's own.
    cpus: float | None = None
    memory_mb: int | None = None


class RolloutResult(BaseModel):
    """What the orchestrator returns for a finished rollout."""

    rollout_id: str
    task_id: str | None = None
    group_id: str | None = None
    harness: str
    backend: str
    status: Outcome
    reward: float | None = None
    error_kind: str | None = None
    error: str | None = None
    n_calls: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)
    isolation: str | None = None  # e.g. "bubblewrap", "process", "docker", "pod"
    logs_dir: str | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    #: The verifier's metrics (every numeric key of reward.json), kept per rollout.
    metrics: dict[str, float] = Field(default_factory=dict)

    @property
    def trainable(self) -> bool:
        """ok and policy_error train (the latter with reward 0); infra_error/timeout do not."""
        return self.status in (Outcome.ok, Outcome.policy_error)
