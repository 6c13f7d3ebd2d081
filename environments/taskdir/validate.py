"""Validation of a task directory: every problem, one line each, never a traceback.

Each problem prints as ``<path>: <field or file>: <problem>``.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from environments.taskdir.model import KNOWN_SCHEMA_VERSIONS, TaskConfig, normalize_raw


@dataclass(frozen=True)
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


def _loc(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def _validate_toml(root: Path, out: list[Problem]) -> None:
    p = str(root)
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        out.append(Problem(p, "task.toml", "missing"))
        return
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        out.append(Problem(p, "task.toml", "not UTF-8 text"))
        return
    except tomllib.TOMLDecodeError as exc:
        out.append(Problem(p, "task.toml", f"unparsable TOML: {exc}"))
        return
    version = raw.get("schema_version", raw.get("version"))
    if version is None:
        out.append(Problem(p, "task.toml: schema_version", "missing (expected \"1.1\")"))
        return
    if str(version) not in KNOWN_SCHEMA_VERSIONS:
        out.append(
            Problem(p, "task.toml: schema_version", f"unknown version {version!r} (known: 1.0, 1.1)")
        )
        return
    try:
        TaskConfig.model_validate(normalize_raw(raw, root.name))
    except ValidationError as exc:
        for err in exc.errors():
            out.append(Problem(p, f"task.toml: {_loc(err['loc'])}", err["msg"]))


def _validate_tools(root: Path, out: list[Problem]) -> None:
    tools_path = root / "environment" / "tools.json"
    if not tools_path.exists():
        return
    p, field = str(root), "environment/tools.json"
    try:
        data = json.loads(tools_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        out.append(Problem(p, field, f"invalid JSON: {exc}"))
        return
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        out.append(Problem(p, field, "expected a list of tools or {\"tools\": [...]}"))
        return
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            out.append(Problem(p, f"{field}: tools[{i}]", "expected an object"))
            continue
        for key in ("name", "description", "input_schema"):
            if key not in tool:
                out.append(Problem(p, f"{field}: tools[{i}].{key}", "missing"))
        if "input_schema" in tool and not isinstance(tool["input_schema"], dict):
            out.append(Problem(p, f"{field}: tools[{i}].input_schema", "expected a JSON schema object"))


def _validate_script(root: Path, rel: str, required: bool, out: list[Problem]) -> None:
    path = root / rel
    if not path.is_file():
        if required:
            out.append(Problem(str(root), rel, "missing"))
        return
    if not os.access(path, os.X_OK):
        out.append(Problem(str(root), rel, "not executable (chmod +x)"))


def validate_task(path: str | Path) -> list[Problem]:
    """Every problem of the task dir at ``path`` (empty list: valid)."""
    root = Path(path)
    if not root.exists():
        return [Problem(str(root), "directory", "does not exist")]
    if not root.is_dir():
        return [Problem(str(root), "directory", "not a directory")]
    problems: list[Problem] = []
    _validate_toml(root, problems)
    instruction = root / "instruction.md"
    if not instruction.is_file():
        problems.append(Problem(str(root), "instruction.md", "missing"))
    elif not instruction.read_text(encoding="utf-8", errors="replace").strip():
        problems.append(Problem(str(root), "instruction.md", "empty"))
    if not (root / "environment" / "Dockerfile").is_file():
        problems.append(Problem(str(root), "environment/Dockerfile", "missing"))
    _validate_script(root, "tests/test.sh", True, problems)
    _validate_script(root, "solution/solve.sh", False, problems)
    _validate_tools(root, problems)
    return problems
