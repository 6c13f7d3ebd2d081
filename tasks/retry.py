"""Retry policy shared by the Prefect tasks: retry infrastructure failures, nothing else."""

from __future__ import annotations

from typing import Any

from prefect.task_engine import TaskRunTimeoutError

INFRA_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, OSError)


def infra_only(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry when the failure is an infrastructure error.

    A task past its own ``timeout_seconds`` is not retried: that ceiling is the preset's
    whole budget for the stage (tasks/budgets.py), so a second attempt would only double it."""
    try:
        state.result()
    except TaskRunTimeoutError:
        return False
    except INFRA_ERRORS:
        return True
    except Exception:  # noqa: BLE001 - anything else (bad input, a bug) fails at once
        return False
    return False
