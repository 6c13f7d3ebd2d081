"""Load, write, hash and import task directories."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from environments.taskdir.model import (
    OPENFORGE_TABLE,
    TaskConfig,
    harbor_name,
    is_legacy_openforge,
    normalize_raw,
)
from environments.taskdir.validate import Problem, validate_task

#: Scripts made executable when we write or import a task (Harbor runs them with bash and
#: chmods them itself; other tools may exec them).
EXECUTABLE_FILES = ("tests/test.sh", "solution/solve.sh")
_ID_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class TaskDirError(ValueError):
    """A task directory failed validation; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class TaskDir:
    """A valid task directory on disk."""

    path: Path
    config: TaskConfig

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def instruction(self) -> str:
        return (self.path / "instruction.md").read_text(encoding="utf-8")

    @property
    def dockerfile(self) -> Path:
        return self.path / "environment" / "Dockerfile"

    @property
    def compose_file(self) -> Path | None:
        """``environment/docker-compose.yaml`` when the task is a compose task."""
        path = self.path / "environment" / "docker-compose.yaml"
        return path if path.is_file() else None

    @property
    def docker_image(self) -> str | None:
        """``[environment] docker_image``: the prebuilt image, used as the task image when
        there is no Dockerfile (Harbor's meaning)."""
        if self.dockerfile.is_file():
            return None
        return self.config.environment.docker_image

    @property
    def tools_file(self) -> Path:
        return self.path / "environment" / "tools.json"

    @property
    def has_solution(self) -> bool:
        return (self.path / "solution" / "solve.sh").is_file()


def load_task(path: str | Path) -> TaskDir:
    """Load and validate a task dir; raises :class:`TaskDirError` listing every problem."""
    path = Path(path)
    problems = validate_task(path)
    if problems:
        raise TaskDirError(problems)
    raw = tomllib.loads((path / "task.toml").read_text(encoding="utf-8"))
    return TaskDir(path=path.resolve(), config=TaskConfig.model_validate(normalize_raw(raw, path.name)))


def _iter_files(root: Path):  # noqa: ANN202
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in {"__pycache__", ".git"})
        for name in sorted(filenames):
            yield Path(dirpath) / name


def content_sha(path: str | Path) -> str:
    """sha256 over every file's relative path, mode bit and bytes (task.toml without its
    own ``metadata.openforge.content_sha``, or ``metadata.content_sha`` in tasks we wrote
    before), so equal task dirs hash equal wherever they live."""
    root = Path(path)
    digest = hashlib.sha256()
    for file in _iter_files(root):
        rel = file.relative_to(root).as_posix()
        data = file.read_bytes()
        if rel == "task.toml":
            try:
                raw = tomllib.loads(data.decode("utf-8"))
                meta = raw.get("metadata")
                if isinstance(meta, dict) and isinstance(meta.get(OPENFORGE_TABLE), dict):
                    meta[OPENFORGE_TABLE].pop("content_sha", None)
                    if not meta[OPENFORGE_TABLE]:  # as written before the sha was stamped
                        meta.pop(OPENFORGE_TABLE)
                    if not meta:
                        raw.pop("metadata")
                elif isinstance(meta, dict) and is_legacy_openforge(raw):
                    meta.pop("content_sha", None)
                data = tomli_w.dumps(raw).encode()
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                pass
        executable = bool(file.stat().st_mode & stat.S_IXUSR)
        digest.update(f"{rel}\0{int(executable)}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def write_task(
    dest: str | Path,
    config: TaskConfig,
    instruction: str,
    files: dict[str, str | bytes],
    *,
    executable: tuple[str, ...] = (),
) -> TaskDir:
    """Write a task dir atomically (temp dir + rename), stamp its content sha, validate it.

    ``files`` maps relative paths (``environment/Dockerfile``, ``tests/test.sh`` ...) to
    contents; ``tests/test.sh`` and ``solution/solve.sh`` are always made executable.
    ``[task].name`` is written as Harbor's ``org/name`` (``openforge/<name>`` unless it has an org).
    """
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        (tmp / "instruction.md").write_text(instruction.rstrip() + "\n", encoding="utf-8")
        for rel, content in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            if rel in EXECUTABLE_FILES or rel in executable:
                target.chmod(0o755)
        cfg = config.model_copy(deep=True)
        cfg.task.name = harbor_name(cfg.task.name)
        cfg.openforge.content_sha = None
        (tmp / "task.toml").write_text(tomli_w.dumps(cfg.to_toml_dict()), encoding="utf-8")
        cfg.openforge.content_sha = content_sha(tmp)
        (tmp / "task.toml").write_text(tomli_w.dumps(cfg.to_toml_dict()), encoding="utf-8")
        problems = validate_task(tmp)
        if problems:
            raise TaskDirError([Problem(str(dest), p.field, p.message) for p in problems])
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return load_task(dest)


def safe_task_id(name: str) -> str:
    return _ID_SAFE.sub("-", name).strip("-.") or "task"


def import_task(
    src: str | Path, tasks_root: str | Path, *, task_id: str | None = None, purpose: str | None = None
) -> TaskDir:
    """Copy a Harbor / Terminal-Bench task dir into the bank with Harbor's meaning: its
    task.toml written back with every field it had (``version`` renamed, legacy sizes as
    ``*_mb``), our keys added in ``[metadata.openforge]`` (purpose, content_sha), scripts
    made executable.

    Raises :class:`TaskDirError` (nothing written) if the source is invalid.
    """
    src = Path(src)
    problems = validate_task(src)
    if problems:
        raise TaskDirError(problems)
    raw = tomllib.loads((src / "task.toml").read_text(encoding="utf-8"))
    config = TaskConfig.model_validate(normalize_raw(raw, src.name))
    config.openforge.content_sha = None
    if purpose is not None:
        config.openforge.purpose = purpose  # type: ignore[assignment]
    dest = Path(tasks_root) / safe_task_id(task_id or src.name)
    tmp = dest.with_name(f".{dest.name}.import-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    try:
        for rel in EXECUTABLE_FILES:
            if (tmp / rel).is_file():
                (tmp / rel).chmod((tmp / rel).stat().st_mode | 0o755)
        (tmp / "task.toml").write_text(tomli_w.dumps(config.to_toml_dict()), encoding="utf-8")
        config.openforge.content_sha = content_sha(tmp)
        (tmp / "task.toml").write_text(tomli_w.dumps(config.to_toml_dict()), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return load_task(dest)
