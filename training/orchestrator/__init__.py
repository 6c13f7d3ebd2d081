"""Orchestrator: sandbox backends (local, docker) and the rollout scheduler (DESIGN §5).

The scheduler runs :class:`~environments.records.RolloutSpec` batches through one
:class:`~training.orchestrator.backend.SandboxBackend` and yields
:class:`~environments.records.RolloutResult` as rollouts finish. Backends know how a
sandbox starts; the scheduler knows timeouts, outcomes, refills, the proxy and the DB.
"""

from training.orchestrator.backend import (
    SandboxBackend,
    SandboxError,
    SandboxExit,
    SandboxHandle,
)
from training.orchestrator.factory import available_backends, make_backend
from training.orchestrator.scheduler import Scheduler, run_rollouts

__all__ = [
    "SandboxBackend",
    "SandboxError",
    "SandboxExit",
    "SandboxHandle",
    "Scheduler",
    "available_backends",
    "make_backend",
    "run_rollouts",
]
