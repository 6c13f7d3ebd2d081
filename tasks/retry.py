"""Retry policy shared by the Prefect tasks: retry infrastructure failures, nothing else."""

from __future__ import annotations

from typing import Any

INFRA_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, OSError)


def infra_only(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry when the failure is an infrastructure error."""
    try:
        state.result()
    except INFRA_ERRORS:
        return True
    except Exception:  # noqa: BLE001 - anything else (bad input, a bug) fails at once
        return False
    return False
