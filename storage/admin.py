"""Data-dir initialisation and DB status (what ``openforge init`` / ``db status`` show)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from openforge.settings import Settings, get_settings
from storage.db import make_engine, session_scope
from storage.migrate import current_revision, head_revision, upgrade
from storage.models import Candidate, Check, ModelCall, Rollout, Run, RunMetric, Task

_TABLES = (Candidate, Task, Check, Rollout, ModelCall, Run, RunMetric)


def redact_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def init_home(settings: Settings | None = None) -> dict[str, Any]:
    """Create the data dir layout and bring the DB to the newest migration (idempotent)."""
    settings = settings or get_settings()
    for path in (settings.home_dir, settings.tasks_dir, settings.models_dir, settings.rollouts_dir, settings.runs_dir):
        path.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.db_url)
    try:
        revision = upgrade(settings.db_url, engine)
    finally:
        engine.dispose()
    return {"home": str(settings.home_dir), "db": redact_url(settings.db_url), "revision": revision}


def db_status(settings: Settings | None = None) -> dict[str, Any]:
    """Revision and row counts (per status where the table has one)."""
    settings = settings or get_settings()
    engine = make_engine(settings.db_url)
    try:
        revision = current_revision(engine)
        tables: dict[str, Any] = {}
        if revision is not None:
            with session_scope(engine) as session:
                for model in _TABLES:
                    entry: dict[str, Any] = {"rows": session.scalar(select(func.count()).select_from(model))}
                    if hasattr(model, "status"):
                        rows = session.execute(select(model.status, func.count()).group_by(model.status))
                        entry["by_status"] = {status: n for status, n in rows}
                    tables[model.__tablename__] = entry
        return {"db": redact_url(settings.db_url), "revision": revision, "head": head_revision(), "tables": tables}
    finally:
        engine.dispose()
