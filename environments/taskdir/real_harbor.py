"""The real Harbor, in its own interpreter (Python >= 3.12, ``scripts/install.sh --dev``
makes ``.venv-harbor``): parse task dirs with its task model to check what we read and write.

``OPENFORGE_HARBOR_PYTHON`` names another interpreter that has ``harbor`` installed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = Path(__file__).with_name("harbor_parse.py")


class HarborUnavailable(RuntimeError):
    """No interpreter with the ``harbor`` package; the message says why and how to get one."""


def harbor_python() -> Path:
    """The interpreter that has ``harbor``; raises :class:`HarborUnavailable` (one line)."""
    named = os.environ.get("OPENFORGE_HARBOR_PYTHON")
    candidate = Path(named) if named else _ROOT / ".venv-harbor" / "bin" / "python"
    if not candidate.is_file():
        raise HarborUnavailable(f"no Harbor interpreter at {candidate} (run scripts/install.sh --dev, which "
                                "creates .venv-harbor with Python >= 3.12, or set OPENFORGE_HARBOR_PYTHON)")
    probe = subprocess.run([str(candidate), "-I", "-c", "import harbor.models.task.config"], capture_output=True, check=False,
                           text=True, timeout=120)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["import failed"])[-1]
        raise HarborUnavailable(f"{candidate}: cannot import harbor: {last}")
    return candidate


def harbor_parse(dirs: list[str | Path], *, python: Path | None = None, timeout: float = 300) -> dict[str, dict[str, Any]]:
    """``{str(dir): {"ok", "config" | "error", "valid_dir"}}`` as Harbor's own model parses each."""
    interpreter = python or harbor_python()
    absolute = {str(Path(d).resolve()): str(d) for d in dirs}
    proc = subprocess.run([str(interpreter), "-I", str(_SCRIPT), *absolute], capture_output=True, check=False,
                          text=True, timeout=timeout, cwd="/")
    if proc.returncode != 0:
        raise HarborUnavailable(f"harbor_parse failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return {absolute[k]: v for k, v in json.loads(proc.stdout).items()}


def harbor_read_rewards(logs_dirs: list[str | Path], *, python: Path | None = None,
                        timeout: float = 300) -> dict[str, dict[str, Any]]:
    """``{str(dir): {"ok", "rewards" | "error"}}``: each ``<dir>/verifier/reward.json`` (else
    reward.txt) as Harbor's verifier parses it."""
    interpreter = python or harbor_python()
    absolute = {str(Path(d).resolve()): str(d) for d in logs_dirs}
    proc = subprocess.run([str(interpreter), "-I", str(_SCRIPT), "--rewards", *absolute], capture_output=True,
                          check=False, text=True, timeout=timeout, cwd="/")
    if proc.returncode != 0:
        raise HarborUnavailable(f"harbor_parse --rewards failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return {absolute[k]: v for k, v in json.loads(proc.stdout).items()}


def harbor_validate_atif(files: list[str | Path], *, python: Path | None = None, timeout: float = 300) -> dict[str, dict[str, Any]]:
    """``{str(file): {"ok", "steps" | "error"}}``: each file as Harbor's ATIF ``Trajectory`` reads it."""
    interpreter = python or harbor_python()
    absolute = {str(Path(f).resolve()): str(f) for f in files}
    proc = subprocess.run([str(interpreter), "-I", str(_SCRIPT), "--atif", *absolute], capture_output=True, check=False,
                          text=True, timeout=timeout, cwd="/")
    if proc.returncode != 0:
        raise HarborUnavailable(f"harbor_parse --atif failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return {absolute[k]: v for k, v in json.loads(proc.stdout).items()}
