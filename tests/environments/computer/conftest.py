"""Fixtures for computer-use tests: generated task dirs, and a skip (with the reason) when
the desktop binaries are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.computer.desktop import missing_binaries
from environments.computer.families import generate
from environments.computer.taskgen import task_config, task_files
from environments.taskdir import write_task

GUI_BINARIES = ("Xvfb", "xdotool", "openbox", "mousepad", "pcmanfm", "xprop", "gsettings")


def needs_desktop() -> pytest.MarkDecorator:
    missing = missing_binaries(GUI_BINARIES)
    return pytest.mark.skipif(bool(missing), reason=f"desktop binaries missing: {', '.join(missing)} "
                              "(apt-get install -y xvfb xdotool openbox mousepad pcmanfm x11-utils libglib2.0-bin)")


def write_family_task(root: Path, family: str, seed: int = 3, difficulty: str = "medium") -> Path:
    t = generate(family, seed, difficulty)  # type: ignore[arg-type]
    return write_task(root / t.name, task_config(t), t.instruction, task_files(t)).path


@pytest.fixture
def family_task(tmp_path: Path):
    return lambda family, seed=3, difficulty="medium": write_family_task(tmp_path / "bank", family, seed, difficulty)
