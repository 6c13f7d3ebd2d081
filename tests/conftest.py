"""Shared fixtures: every test gets its own OPENFORGE_HOME and a migrated SQLite DB."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from openforge.settings import get_settings

#: Task dirs used as fixtures hold their own verifiers (a Terminal-Bench task's
#: tests/test_outputs.py runs inside its container, against /app): never this suite's tests.
collect_ignore_glob = ["fixtures/*"]

#: Every CLI command is a Prefect flow run (cli/): a test that runs one, in-process or as a
#: subprocess, reports to the embedded API under PREFECT_HOME. Never the user's ~/.prefect:
#: one temporary Prefect home for the session unless the caller chose one (tests/flows
#: fixtures and the deployment tests set their own).
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="openforge-tests-prefect-"))


@pytest.fixture(autouse=True)
def openforge_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolated data dir (``OPENFORGE_HOME``) per test; settings cache cleared around it."""
    home = tmp_path / "openforge-home"
    monkeypatch.setenv("OPENFORGE_HOME", str(home))
    monkeypatch.delenv("OPENFORGE_DB", raising=False)
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture
def sqlite_url(openforge_home: Path) -> str:
    return f"sqlite:///{openforge_home / 'openforge.db'}"


@pytest.fixture
def db_engine(sqlite_url: str):
    """A migrated SQLite engine in the test's data dir."""
    from storage.db import make_engine
    from storage.migrate import upgrade

    engine = make_engine(sqlite_url)
    upgrade(sqlite_url, engine)
    yield engine
    engine.dispose()


def pytest_report_header(config) -> str:  # noqa: ANN001
    return f"openforge tests: OPENFORGE_TOOLS_DIR={os.environ.get('OPENFORGE_TOOLS_DIR', '/opt/openforge-tools')}"
