"""The shared task DB: SQLAlchemy 2 models, engine/session from a URL, Alembic migrations,
and the few query functions that claim and transition rows atomically.

Knows nothing about Prefect, HTTP or models.
"""

from storage.db import make_engine, session_scope, SessionFactory
from storage.models import (
    Base,
    Candidate,
    Check,
    ModelCall,
    Rollout,
    Run,
    RunMetric,
    Task,
)

__all__ = [
    "Base",
    "Candidate",
    "Check",
    "ModelCall",
    "Rollout",
    "Run",
    "RunMetric",
    "SessionFactory",
    "Task",
    "make_engine",
    "session_scope",
]
