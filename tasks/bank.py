"""Prefect tasks over the data dir and the task bank: select, init, import, verify, export.

Each calls one plain function (``storage.admin``, ``environments.bank``,
``training.orchestrator.bank_checks``) and is never cached (every run reads or writes the bank
as it is now). They are synchronous: ``verify`` runs each rollout with its own event loop, and
a sync flow runs them in the main thread, where Ctrl-C reaches the rollout and cleans it up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from environments.bank import export_tasks, import_tasks, list_tasks


@task(name="select-tasks")
def select_task_dirs(domain: str | None, purpose: str | None, limit: int | None = None, offset: int = 0) -> list[str]:
    """Verified task dirs of a domain/purpose from the bank (sorted by id)."""
    rows = [r for r in list_tasks(status="verified", domain=domain) if purpose is None or r["purpose"] == purpose]
    rows = rows[offset:]
    return [r["dir"] for r in (rows[:limit] if limit else rows)]


@task(name="init-data-dir", cache_policy=NO_CACHE)
def init_data_dir() -> dict[str, Any]:
    """The data dir layout and the task DB at the newest migration (idempotent)."""
    from storage.admin import init_home

    return init_home()


@task(name="import-tasks", cache_policy=NO_CACHE)
def import_task_dirs(paths: list[str], purpose: str | None) -> dict[str, Any]:
    """Valid task dirs copied into the bank (``imported``); the invalid ones as problem lines."""
    imported, problems = import_tasks([Path(p) for p in paths], purpose=purpose)
    return {"imported": imported, "problems": [str(p) for p in problems]}


@task(name="verify-tasks", cache_policy=NO_CACHE)
def verify_bank_tasks(task_ids: list[str] | None, backend: str) -> list[dict[str, Any]]:
    """Oracle (must score 1) and no-op (must score 0) rollouts on ``backend``; passing tasks
    become ``verified``."""
    from training.orchestrator.bank_checks import verify_tasks

    return verify_tasks(task_ids, backend=backend)


@task(name="export-tasks", cache_policy=NO_CACHE)
def export_bank_tasks(dest: str, task_ids: list[str] | None, status: str) -> list[dict[str, Any]]:
    """Bank tasks written as Harbor task dirs under ``dest``."""
    return export_tasks(Path(dest), task_ids, status=status)
