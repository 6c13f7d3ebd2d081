"""The sandbox runtime's bytecode is compiled on the host, beside the sources."""

from __future__ import annotations

import importlib.util
import os
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


@pytest.mark.asyncio
async def test_fresh_bytecode_is_checked_in_process_and_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No compileall interpreter when every .pyc is current; a changed source is not fresh;
    one check per (python, checkout) per process."""
    from training.orchestrator import bytecode

    repo = _checkout(tmp_path)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    assert bytecode.runtime_fresh(repo) is False
    assert await compile_runtime(sys.executable, repo) is True
    assert bytecode.runtime_fresh(repo) is True
    mod = repo / "environments" / "sub" / "mod.py"
    mod.write_text("VALUE = 10\n")  # other size: its .pyc is stale, as the import system sees it
    assert bytecode.runtime_fresh(repo) is False
    later = mod.stat().st_mtime + 2  # compileall itself compares the mtime only
    os.utime(mod, (later, later))
    assert await compile_runtime(sys.executable, repo) is True

    calls: list[str] = []

    async def counting(python: str, root: Path) -> bool:
        calls.append(python)
        return True

    monkeypatch.setattr(bytecode, "compile_runtime", counting)
    monkeypatch.setattr(bytecode, "_DONE", {})
    assert await bytecode.ensure_runtime_bytecode(sys.executable, repo) is True
    assert calls == []  # fresh: no interpreter started
    other = str(tmp_path / "other-python")
    assert await bytecode.ensure_runtime_bytecode(other, repo) is True
    assert await bytecode.ensure_runtime_bytecode(other, repo) is True
    assert calls == [other]  # another interpreter's cache tag: compiled by it, once
