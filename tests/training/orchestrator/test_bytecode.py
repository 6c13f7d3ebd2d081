"""The sandbox runtime's bytecode is compiled on the host, beside the sources."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from training.orchestrator.bytecode import compile_runtime, runtime_packages


def _checkout(root: Path) -> Path:
    (root / "environments" / "sub").mkdir(parents=True)
    (root / "environments" / "__init__.py").write_text("")
    (root / "environments" / "sub" / "mod.py").write_text("VALUE = 1\n")
    (root / "synthesis").mkdir()
    (root / "synthesis" / "other.py").write_text("VALUE = 2\n")  # not a runtime package
    return root


@pytest.mark.asyncio
async def test_runtime_packages_are_compiled_into_pycache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _checkout(tmp_path)
    # Neither a host-only cache prefix nor "don't write bytecode" may keep it from the sandboxes.
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert runtime_packages(repo) == [repo / "environments"]
    assert await compile_runtime(sys.executable, repo) is True
    for src in (repo / "environments" / "__init__.py", repo / "environments" / "sub" / "mod.py"):
        # cache_from_source honours sys.pycache_prefix; the sandbox's interpreter has none
        monkeypatch.setattr(sys, "pycache_prefix", None)
        assert Path(importlib.util.cache_from_source(str(src))).is_file()
    assert not (repo / "synthesis" / "__pycache__").exists()
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.asyncio
async def test_an_interpreter_that_cannot_run_is_reported_not_raised(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    assert await compile_runtime(str(tmp_path / "no-python"), repo) is False
    assert not (repo / "environments" / "__pycache__").exists()
