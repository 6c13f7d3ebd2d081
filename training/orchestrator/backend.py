"""The sandbox backend protocol every backend implements (local, docker; kubernetes later).

``start(spec) -> handle`` lays out and launches one sandbox running the in-sandbox runner
(docs/CONTRACTS.md); ``wait(handle) -> SandboxExit`` follows it to its end (copying the
task's tests in on ``OPENFORGE_PHASE agent_done`` and parsing ``OPENFORGE_RESULT``);
``cancel(handle)`` kills it; ``logs(handle)`` returns what it printed; ``cleanup(handle)``
removes it. ``start`` raises :class:`SandboxError` with an ``ErrorKind`` on failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from environments.records import ErrorKind, RolloutSpec, RunnerReport

#: Line the runner prints when the agent phase is over (tests are copied in on it).
PHASE_AGENT_DONE = "OPENFORGE_PHASE agent_done"


class SandboxError(RuntimeError):
    """A sandbox could not be built or started; ``kind`` classifies it (an ErrorKind)."""

    def __init__(self, message: str, *, kind: ErrorKind = ErrorKind.start_failed) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class SandboxHandle:
    """A started sandbox. ``state`` holds backend-private objects (process, container)."""

    rollout_id: str
    backend: str
    isolation: str
    root: str  # host dir of this rollout (rollouts_dir/<rollout_id>)
    logs_dir: str  # host dir bound at /logs (kept after cleanup)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. Dockerfile instructions not honoured
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class SandboxExit:
    """How a sandbox ended."""

    exit_code: int | None
    report: RunnerReport | None = None
    oom: bool = False
    cancelled: bool = False
    #: A resource limit ended the sandbox (an ErrorKind value: ``oom``, ``storage_exceeded``);
    #: it wins over the runner's report (the rollout is not trainable).
    limit: str | None = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class SandboxBackend(Protocol):
    """What the scheduler needs of a sandbox backend."""

    name: str

    async def start(self, spec: RolloutSpec) -> SandboxHandle: ...

    async def wait(self, handle: SandboxHandle) -> SandboxExit: ...

    async def cancel(self, handle: SandboxHandle) -> None: ...

    async def logs(self, handle: SandboxHandle) -> str: ...

    async def cleanup(self, handle: SandboxHandle) -> None: ...

    async def live_sandboxes(self) -> list[str]:
        """Ids of sandboxes of this backend still present (leak check)."""
        ...

    async def aclose(self) -> None: ...
