"""The task bank: task directories under the data dir and their rows in the task DB.

Imports Harbor / Terminal-Bench folders (a task dir, a dataset folder of task dirs, a
``registry.json``-style listing of local paths), registers built tasks, lists and shows
them, verifies imported ones (oracle 1, no-op 0) and exports tasks for Harbor.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w
from sqlalchemy import Engine, select

from environments.taskdir import (
    Problem,
    TaskDir,
    TaskDirError,
    harbor_name,
    import_task,
    load_task,
)
from openforge.settings import Settings, get_settings
from storage.db import make_engine, session_scope
from storage.migrate import upgrade
from storage.models import Check, Task, TaskStatus


def _engine(settings: Settings) -> Engine:
    engine = make_engine(settings.db_url)
    upgrade(settings.db_url, engine)
    return engine


def register_task(
    engine: Engine, task: TaskDir, *, status: TaskStatus = TaskStatus.built, source: str = "synthesis", **values: Any
) -> None:
    """Insert or update the DB row of a task dir (id = directory name)."""
    meta = task.config.openforge
    row_values = dict(
        name=task.config.task.name,
        domain=meta.domain,
        category=task.config.category,
        difficulty=task.config.difficulty,
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


def _registry_paths(listing: Path) -> tuple[list[Path], list[Problem]]:
    """Local task paths of a Harbor ``registry.json``-style file: a list of datasets with
    ``tasks: [{"path": ...}]`` (or a list of such task entries / path strings); relative paths
    are relative to the file."""
    try:
        doc = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [], [Problem(str(listing), "registry", f"unreadable: {exc}")]
    entries = doc if isinstance(doc, list) else [doc]
    out: list[Path] = []
    problems: list[Problem] = []
    for i, entry in enumerate(entries):
        tasks = entry.get("tasks") if isinstance(entry, dict) and "tasks" in entry else [entry]
        for j, item in enumerate(tasks if isinstance(tasks, list) else []):
            local = item if isinstance(item, str) else (item.get("path") if isinstance(item, dict) else None)
            if not isinstance(local, str):
                problems.append(Problem(str(listing), f"[{i}].tasks[{j}].path", "missing (only local paths import)"))
                continue
            out.append((listing.parent / local).resolve())
    return out, problems


def expand_sources(paths: list[Path]) -> tuple[list[Path], list[Problem]]:
    """Task dirs named by ``paths``: a task dir itself, a dataset folder (or a Harbor download
    cache) holding task dirs at any depth, or a registry listing (``*.json``)."""
    out: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_file() and path.suffix == ".json":
            found, bad = _registry_paths(path)
            out += found
            problems += bad
        elif path.is_dir() and not (path / "task.toml").is_file():
            found = sorted(p.parent for p in path.rglob("task.toml")
                           if not any(part.startswith(".") for part in p.relative_to(path).parts))
            # outermost task dirs only (a task's own subdirs are not tasks)
            found = [p for p in found if not any(q != p and q in p.parents for q in found)]
            if not found:
                problems.append(Problem(str(path), "task.toml", "missing (not a task dir, and no task dirs under it)"))
            out += found
        else:
            out.append(path)
    return out, problems


def import_tasks(
    paths: list[Path], *, purpose: str | None = None, settings: Settings | None = None
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Import every valid dir (status ``imported`` until :func:`verify_tasks` promotes it);
    invalid ones are reported and nothing of them is written."""
    settings = settings or get_settings()
    engine = _engine(settings)
    imported: list[dict[str, Any]] = []
    sources, problems = expand_sources(paths)
    try:
        for path in sources:
            try:
                task = import_task(path, settings.tasks_dir, purpose=purpose)
            except TaskDirError as exc:
                problems.extend(exc.problems)
                continue
            register_task(engine, task, status=TaskStatus.imported, source="import")
            imported.append({"id": task.id, "dir": str(task.path)})
    finally:
        engine.dispose()
    return imported, problems


#: ``(task_dir, harness, backend) -> RolloutResult-like dict`` (``reward``, ``status``, ``error``).
RolloutFn = Callable[[str, str, str], dict[str, Any]]


def _to_verify(engine: Engine, task_ids: list[str] | None) -> list[tuple[str, str, str]]:
    """``(id, dir, status)`` of the given tasks, else of every ``imported`` one, by id."""
    with session_scope(engine) as session:
        query = select(Task).order_by(Task.id)
        query = query.where(Task.id.in_(task_ids)) if task_ids else query.where(Task.status == TaskStatus.imported.value)
        return [(r.id, r.dir, r.status) for r in session.scalars(query)]


def dirs_to_verify(task_ids: list[str] | None = None, *, settings: Settings | None = None) -> list[str]:
    """The task dirs :func:`verify_tasks` would check for ``task_ids`` (else every ``imported`` task)."""
    engine = _engine(settings or get_settings())
    try:
        return [task_dir for _, task_dir, _ in _to_verify(engine, task_ids)]
    finally:
        engine.dispose()


def verify_tasks(
    task_ids: list[str] | None = None, *, rollout: RolloutFn, backend: str = "local", settings: Settings | None = None,
) -> list[dict[str, Any]]:
    """Run the oracle (must score 1.0) and the no-op agent (must score 0.0) on each task
    (default: every ``imported`` one) through ``rollout`` on ``backend``; passing tasks become
    ``verified``, the others stay as they are with the reason in ``error``. Each run is a
    ``checks`` row. The bank does not run sandboxes: the orchestrator's
    ``training.orchestrator.bank_checks.verify_tasks`` passes its real rollout."""
    settings = settings or get_settings()
    engine = _engine(settings)
    out: list[dict[str, Any]] = []
    try:
        rows = _to_verify(engine, task_ids)
        missing = sorted(set(task_ids or []) - {r[0] for r in rows})
        out += [{"id": m, "status": None, "passed": False, "error": "no such task"} for m in missing]
        for task_id, task_dir, status in rows:
            results: dict[str, dict[str, Any]] = {}
            for harness, want in (("oracle", 1.0), ("noop", 0.0)):
                try:
                    res = rollout(task_dir, harness, backend)
                except Exception as exc:  # noqa: BLE001 - a refused task is a failed check, not a crash
                    res = {"status": "infra_error", "reward": None, "error": str(exc).splitlines()[0]}
                res["passed"] = res.get("status") in ("ok", "policy_error") and res.get("reward") == want
                results[harness] = res
                with session_scope(engine) as session:
                    session.add(Check(task_id=task_id, kind=harness, passed=res["passed"], reward=res.get("reward"),
                                      seconds=float(res.get("seconds") or 0.0), log_path=res.get("logs_dir"),
                                      detail={"backend": backend, "want": want, "status": res.get("status"),
                                              "error": res.get("error")}))
            passed = all(r["passed"] for r in results.values())
            error = None if passed else "; ".join(
                f"{h}: reward {r.get('reward')} (want {w:g}), {r.get('status')}" + (f": {r['error']}" if r.get("error") else "")
                for (h, w), r in zip((("oracle", 1.0), ("noop", 0.0)), results.values(), strict=True) if not r["passed"])
            with session_scope(engine) as session:
                row = session.get(Task, task_id)
                if row is not None:
                    if passed:
                        row.status = TaskStatus.verified.value
                    row.error = error
                    status = row.status
            out.append({"id": task_id, "status": status, "passed": passed, "error": error,
                        "oracle": results["oracle"].get("reward"), "noop": results["noop"].get("reward")})
    finally:
        engine.dispose()
    return out


def export_tasks(
    dest: Path, task_ids: list[str] | None = None, *, status: str | None = "verified", settings: Settings | None = None,
) -> list[dict[str, Any]]:
    """Copy bank tasks (default: every ``verified`` one) to ``dest/<id>/`` as Harbor reads
    them: ``[task].name`` as ``org/name``, our keys only in ``[metadata.openforge]``."""
    settings = settings or get_settings()
    engine = _engine(settings)
    try:
        with session_scope(engine) as session:
            query = select(Task).order_by(Task.id)
            if task_ids:
                query = query.where(Task.id.in_(task_ids))
            elif status:
                query = query.where(Task.status == status)
            rows = [(r.id, r.dir) for r in session.scalars(query)]
    finally:
        engine.dispose()
    dest.mkdir(parents=True, exist_ok=True)
    out: list[dict[str, Any]] = []
    for task_id, task_dir in rows:
        task = load_task(task_dir)
        target = dest / task_id
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(task.path, target, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        config = task.config.model_copy(deep=True)
        config.task.name = harbor_name(config.task.name)
        (target / "task.toml").write_text(tomli_w.dumps(config.to_toml_dict()), encoding="utf-8")
        out.append({"id": task_id, "name": config.task.name, "dir": str(target)})
    return out


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
