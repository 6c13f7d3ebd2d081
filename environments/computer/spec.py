"""A task's desktop spec: ``environment/desktop.json`` (screen size and the apps to open
before the first screenshot), read by the computer-use harness.

    {"width": 1920, "height": 1080,
     "apps": [{"argv": ["mousepad", "notes.txt"], "window": "mousepad"}]}

``argv`` runs in the workspace; ``window`` (a WM_CLASS) is waited for and focused.
``config_home`` (optional, relative to the workspace) is where apps keep their settings
(XDG_CONFIG_HOME, GSettings keyfile), so a verifier can read them after the rollout.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

DESKTOP_FILE = "environment/desktop.json"


class AppSpec(BaseModel):
    argv: list[str] = Field(min_length=1)
    window: str | None = None


class DesktopSpec(BaseModel):
    width: int = Field(default=1920, ge=320, le=7680)
    height: int = Field(default=1080, ge=240, le=4320)
    apps: list[AppSpec] = Field(default_factory=list)
    config_home: str | None = None


def load_desktop_spec(task_dir: Path | None) -> DesktopSpec:
    """The task's desktop spec; defaults when the task has none."""
    if task_dir is None:
        return DesktopSpec()
    path = task_dir / DESKTOP_FILE
    if not path.is_file():
        return DesktopSpec()
    return DesktopSpec.model_validate(json.loads(path.read_text(encoding="utf-8")))
