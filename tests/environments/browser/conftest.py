"""Browser-environment fixtures: generated family tasks in a temp bank, and a skip (with the
reason printed) when Chromium or Playwright cannot start here."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from environments.browser.families import FAMILIES, BrowserTask, generate
from environments.taskdir import write_task

CHROMIUM = os.environ.get("OPENFORGE_CHROMIUM", "/usr/bin/chromium")


def chromium_problem() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install 'openforge[gui]')"
    if not os.path.exists(CHROMIUM):
        return f"chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    return None


needs_chromium = pytest.mark.skipif(chromium_problem() is not None, reason=chromium_problem() or "")


def write_family_task(root: Path, family: str, seed: int = 0, difficulty: str | None = None) -> tuple[Path, BrowserTask]:
    task = generate(family, seed, difficulty)  # type: ignore[arg-type]
    return write_task(root / task.name, task.config(), task.instruction, task.files()).path, task


@pytest.fixture
def family_names() -> list[str]:
    return sorted(FAMILIES)
