"""Where a claw process gets its fixtures: a directory of ``<service>.json`` files or one
JSON file ``{"<service>": {...}}``; re-read on every reset so edits apply without restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.claw.core import FixtureError


class FixtureSource:
    """Fixtures for each service from ``path`` (dir or file); ``None`` → empty services."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        if self.path is not None and not self.path.exists():
            raise FixtureError(f"{self.path}: fixtures path does not exist")

    @staticmethod
    def _read(file: Path) -> Any:
        try:
            return json.loads(file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FixtureError(f"{file}: invalid JSON: {exc}") from None

    def load(self, service: str) -> dict[str, Any]:
        if self.path is None:
            return {}
        if self.path.is_dir():
            file = self.path / f"{service}.json"
            if not file.is_file():
                return {}
            data = self._read(file)
            if not isinstance(data, dict):
                raise FixtureError(f"{file}: expected a JSON object")
            return data
        data = self._read(self.path)
        if not isinstance(data, dict):
            raise FixtureError(f"{self.path}: expected a JSON object keyed by service")
        section = data.get(service, {})
        if not isinstance(section, dict):
            raise FixtureError(f"{self.path}: {service}: expected a JSON object")
        return section
