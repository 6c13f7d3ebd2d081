"""Validation of a task directory: every problem, one line each, never a traceback.

Each problem prints as ``<path>: <field or file>: <problem>``. What is checked is what
Harbor requires (task.toml parses into its task model; instruction.md, or one per step;
an environment: Dockerfile, docker-compose.yaml or ``[environment] docker_image``;
tests/test.sh unless a separate verifier image bundles the tests), plus what we refuse
(Windows tasks) and our own environment/tools.json.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from environments.taskdir.model import TaskConfig, normalize_raw


@dataclass(frozen=True)
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


def _loc(loc: tuple) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] == "openforge":  # our keys live in [metadata.openforge]
        parts = ["metadata", *parts]
    return ".".join(parts)


def _read_config(root: Path, out: list[Problem]) -> TaskConfig | None:
    p = str(root)
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        out.append(Problem(p, "task.toml", "missing"))
        return None
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        out.append(Problem(p, "task.toml", "not UTF-8 text"))
        return None
    except tomllib.TOMLDecodeError as exc:
        out.append(Problem(p, "task.toml", f"unparsable TOML: {exc}"))
        return None
    try:
        config = TaskConfig.model_validate(normalize_raw(raw, root.name))
    except ValidationError as exc:
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            out.append(Problem(p, f"task.toml: {_loc(err['loc'])}" if err["loc"] else "task.toml", msg))
        return None
    if config.environment.os == "windows":
        out.append(Problem(p, "task.toml: environment.os", "'windows' tasks are not supported "
                                                            "(OpenForge sandboxes run Linux)"))
    return config


def _validate_environment(root: Path, config: TaskConfig | None, out: list[Problem]) -> None:
    env = root / "environment"
    if (env / "Dockerfile").is_file() or (env / "docker-compose.yaml").is_file():
        return
    if config is not None and config.environment.docker_image:
        return
    out.append(Problem(str(root), "environment/Dockerfile",
                       "missing (or environment/docker-compose.yaml, or [environment] docker_image)"))


def _bundled_verifier(root: Path, config: TaskConfig) -> bool:
    """Harbor: a separate verifier whose image already holds the tests (its own
    docker_image, or a Dockerfile / compose file in tests/)."""
    if config.verifier.mode != "separate":
        return False
    env = config.verifier.environment
    if env is not None and not isinstance(env, str) and env.docker_image:
        return True
    return any((root / "tests" / name).is_file() for name in ("Dockerfile", "docker-compose.yaml"))


def _validate_instructions_and_tests(root: Path, config: TaskConfig | None, out: list[Problem]) -> None:
    p = str(root)
    if config is not None and config.steps:
        shared_test = (root / "tests" / "test.sh").is_file()
        for step in config.steps:
            rel = f"steps/{step.name}"
            if not (root / rel).is_dir():
                out.append(Problem(p, rel, "missing (declared in [[steps]])"))
                continue
            _validate_instruction(root, f"{rel}/instruction.md", out)
            if not shared_test and not (root / rel / "tests" / "test.sh").is_file():
                out.append(Problem(p, f"{rel}/tests/test.sh", "missing (and no shared tests/test.sh)"))
        return
    _validate_instruction(root, "instruction.md", out)
    if config is not None and _bundled_verifier(root, config):
        return
    if not (root / "tests" / "test.sh").is_file():
        out.append(Problem(p, "tests/test.sh", "missing"))


def _validate_instruction(root: Path, rel: str, out: list[Problem]) -> None:
    instruction = root / rel
    if not instruction.is_file():
        out.append(Problem(str(root), rel, "missing"))
    elif not instruction.read_text(encoding="utf-8", errors="replace").strip():
        out.append(Problem(str(root), rel, "empty"))


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


def validate_task(path: str | Path) -> list[Problem]:
    """Every problem of the task dir at ``path`` (empty list: valid). Scripts need no
    executable bit: tests/test.sh and solution/solve.sh are run with ``bash``, as Harbor does."""
    root = Path(path)
    if not root.exists():
        return [Problem(str(root), "directory", "does not exist")]
    if not root.is_dir():
        return [Problem(str(root), "directory", "not a directory")]
    problems: list[Problem] = []
    config = _read_config(root, problems)
    _validate_instructions_and_tests(root, config, problems)
    _validate_environment(root, config, problems)
    _validate_tools(root, problems)
    return problems
