"""Harbor's ``[environment.healthcheck]`` before the agent starts (Docker HEALTHCHECK
semantics): run ``command`` every ``interval_sec`` (``start_interval_sec`` during the
``start_period_sec`` grace, whose failures do not count), each run capped at ``timeout_sec``;
healthy on the first exit 0, failed after ``retries`` counted failures."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from environments.procs import run_process
from environments.taskdir import HealthcheckSection


class HealthcheckError(RuntimeError):
    """The environment never became healthy (infra_error/start_failed)."""


async def wait_healthy(check: HealthcheckSection, *, env: dict[str, str], cwd: Path, log_path: Path) -> float:
    """Seconds until healthy; raises :class:`HealthcheckError` (one line)."""
    start = time.monotonic()
    failures, last = 0, "?"
    while True:
        result = await run_process(["bash", "-c", check.command], env=env, cwd=cwd, log_path=log_path,
                                   timeout=check.timeout_sec)
        if result.returncode == 0 and not result.timed_out:
            return time.monotonic() - start
        last = f"timed out after {check.timeout_sec:g}s" if result.timed_out else f"exit {result.returncode}"
        grace = time.monotonic() - start < check.start_period_sec
        if not grace:
            failures += 1
            if failures >= check.retries:
                raise HealthcheckError(f"[environment.healthcheck] {check.command!r} failed {failures} time(s), "
                                       f"last: {last} (see {log_path.name})")
        await asyncio.sleep(check.start_interval_sec if grace else check.interval_sec)
