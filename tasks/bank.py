"""Prefect tasks over the task bank."""

from __future__ import annotations

from prefect import task

from environments.bank import list_tasks


@task(name="select-tasks")
def select_task_dirs(domain: str | None, purpose: str | None, limit: int | None = None, offset: int = 0) -> list[str]:
    """Verified task dirs of a domain/purpose from the bank (sorted by id)."""
    rows = [r for r in list_tasks(status="verified", domain=domain) if purpose is None or r["purpose"] == purpose]
    rows = rows[offset:]
    return [r["dir"] for r in (rows[:limit] if limit else rows)]
