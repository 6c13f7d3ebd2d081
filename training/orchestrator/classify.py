"""Turn how a sandbox ended into a :class:`RolloutResult` outcome (DESIGN §5).

- a resource limit passed (cgroup OOM kill, docker OOMKilled, the disk watchdog) →
  ``infra_error/oom`` or ``infra_error/storage_exceeded``, even when the runner reported;
- a runner report → its status/reward/error_kind (the runner classified the harness);
- no report: out of memory → ``infra_error/oom``; the runner never got going (exec
  failure, bubblewrap refused) → ``infra_error/start_failed``; otherwise
  ``infra_error/harness_crash``;
- start failures raised by the backend keep their kind (``build_failed``, ``start_failed`` ...);
- the wall clock passing the rollout timeout → ``timeout``.
"""

from __future__ import annotations

from environments.records import ErrorKind, Outcome, RolloutResult, RolloutSpec
from training.orchestrator.backend import SandboxExit, SandboxHandle

#: Exit codes that mean "could not exec" (shell conventions).
_EXEC_FAILED = (126, 127)


def base_result(spec: RolloutSpec, backend: str, handle: SandboxHandle | None) -> RolloutResult:
    return RolloutResult(
        rollout_id=spec.rollout_id,
        task_id=spec.task_id,
        group_id=spec.group_id,
        harness=spec.harness,
        backend=backend,
        status=Outcome.infra_error,
        isolation=handle.isolation if handle else None,
        logs_dir=handle.logs_dir if handle else None,
    )


def from_exit(result: RolloutResult, ex: SandboxExit, *, log_tail: str = "") -> RolloutResult:
    """Fill ``result`` from a sandbox exit (in place; returned for chaining)."""
    result.timings.update(ex.timings)
    if ex.limit is not None or ex.oom:
        # Past memory_mb / storage_mb: whatever the runner said, the rollout is an infra error.
        result.status, result.reward = Outcome.infra_error, None
        result.error_kind = ex.limit or ErrorKind.oom.value
        result.error = ex.error or "sandbox killed: out of memory"
        if ex.report is not None:
            result.timings.update({f"runner_{k}": v for k, v in ex.report.timings.items()})
        return result
    if ex.report is not None:
        rep = ex.report
        result.status = rep.status
        result.reward = rep.reward
        result.error_kind = rep.error_kind
        result.error = rep.error
        result.checks = rep.checks
        result.metrics = dict(rep.metrics)
        result.timings.update({f"runner_{k}": v for k, v in rep.timings.items()})
        if result.status == Outcome.policy_error and result.reward is None:
            result.reward = 0.0
        return result
    result.status = Outcome.infra_error
    last = next((ln.strip() for ln in reversed(log_tail.splitlines()) if ln.strip()), "")
    if ex.oom:
        result.error_kind = ErrorKind.oom.value
        result.error = ex.error or "sandbox killed: out of memory"
    elif ex.exit_code in _EXEC_FAILED or last.startswith("bwrap:"):
        result.error_kind = ErrorKind.start_failed.value
        result.error = f"sandbox did not start (exit {ex.exit_code}): {last[:300]}"
    else:
        result.error_kind = ErrorKind.harness_crash.value
        result.error = ex.error or f"runner exited {ex.exit_code} without a report: {last[:300]}"
    return result
