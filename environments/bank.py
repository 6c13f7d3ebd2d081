"""The task bank: task directories under the data dir and their rows in the task DB.

Imports Harbor / Terminal-Bench folders, registers built tasks, lists and shows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from environments.taskdir import Problem, TaskDir, TaskDirError, import_task
from openforge.settings import Settings, get_settings
from storage.db import make_engine, session_scope
from storage.migrate import upgrade
from storage.models import Task, TaskStatus


def _engine(settings: Settings) -> Engine:
    engine = make_engine(settings.db_url)
    upgrade(settings.db_url, engine)
    return engine


def register_task(
    engine: Engine, task: TaskDir, *, status: TaskStatus = TaskStatus.built, source: str = "synthesis", **values: Any
) -> None:
    """Insert or update the DB row of a task dir (id = directory name)."""
    meta = task.config.metadata
    row_values = dict(
        name=task.config.task.name,
        domain=meta.domain,
        category=meta.category,
        difficulty=meta.difficulty,
        purpose=meta.purpose,
        dir=str(task.path),
        content_sha=meta.content_sha,
        source=source,
        synth_run_id=meta.synth_run_id,
        **values,
    )
    with session_scope(engine) as session:
        row = session.get(Task, task.id)
        if row is None:
            session.add(Task(id=task.id, status=status.value, **row_values))
        else:
            for key, value in row_values.items():
                setattr(row, key, value)


def import_tasks(
    paths: list[Path], *, purpose: str | None = None, settings: Settings | None = None
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Import every valid dir; invalid ones are reported and nothing of them is written."""
    settings = settings or get_settings()
    engine = _engine(settings)
    imported: list[dict[str, Any]] = []
    problems: list[Problem] = []
    try:
        for path in paths:
            try:
                task = import_task(path, settings.tasks_dir, purpose=purpose)
            except TaskDirError as exc:
                problems.extend(exc.problems)
                continue
            register_task(engine, task, status=TaskStatus.verified, source="import")
            imported.append({"id": task.id, "dir": str(task.path)})
    finally:
        engine.dispose()
    return imported, problems


def _row_dict(row: Task) -> dict[str, Any]:
    return {"id": row.id, "domain": row.domain, "purpose": row.purpose, "status": row.status, "dir": row.dir}


def list_tasks(
    *, status: str | None = None, domain: str | None = None, settings: Settings | None = None
) -> list[dict[str, Any]]:
    """Tasks as ``{"id","domain","purpose","status","dir"}`` (DESIGN §10), by id."""
    settings = settings or get_settings()
    engine = _engine(settings)
    try:
        query = select(Task).order_by(Task.id)
        if status:
            query = query.where(Task.status == status)
        if domain:
            query = query.where(Task.domain == domain)
        with session_scope(engine) as session:
            return [_row_dict(row) for row in session.scalars(query)]
    finally:
        engine.dispose()


def show_task(task_id: str, *, settings: Settings | None = None) -> dict[str, Any] | None:
    """One task's row, checks and instruction, or None."""
    settings = settings or get_settings()
    engine = _engine(settings)
    try:
        with session_scope(engine) as session:
            row = session.get(Task, task_id)
            if row is None:
                return None
            info = _row_dict(row) | {
                "category": row.category,
                "difficulty": row.difficulty,
                "content_sha": row.content_sha,
                "pass_rate": row.pass_rate,
                "refine_iters": row.refine_iters,
                "cost_usd": row.cost_usd,
                "error": row.error,
                "checks": [
                    {"kind": c.kind, "passed": c.passed, "reward": c.reward, "log_path": c.log_path}
                    for c in row.checks
                ],
            }
        instruction = Path(info["dir"]) / "instruction.md"
        info["instruction"] = instruction.read_text(encoding="utf-8") if instruction.is_file() else None
        return info
    finally:
        engine.dispose()
