"""Presets are package data: a wheel carries them and a non-editable install (the wheel
unpacked elsewhere, run from outside the checkout) loads every named preset."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

import openforge
from openforge.presets import CONFIGS_DIR, list_presets, load_preset

REPO = Path(__file__).resolve().parents[1]
NAMED = {"local", "claw", "computer-use", "browser-use"}


def _copy_source(dest: Path) -> None:
    """pyproject.toml, README.md and the packages pyproject includes (what the wheel is built from)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for folder in REPO.iterdir():
        if folder.is_dir() and (folder / "__init__.py").is_file() and any(fnmatch(folder.name, p) for p in patterns):
            shutil.copytree(folder, dest / folder.name, ignore=shutil.ignore_patterns("__pycache__"))


def test_named_presets_resolve_from_the_package() -> None:
    assert CONFIGS_DIR == Path(openforge.__file__).resolve().parent / "configs"
    assert NAMED <= set(list_presets())
    assert load_preset("claw").name == "claw"
    assert not list((REPO / "configs").glob("*.toml")), "presets belong in openforge/configs/"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_non_editable_install_finds_the_presets(tmp_path: Path) -> None:
    source, wheels = tmp_path / "source", tmp_path / "wheels"
    _copy_source(source)  # setuptools writes build/ beside the source: not into the checkout
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            str(source), "-w", str(wheels)], check=False, capture_output=True, text=True, timeout=500)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(wheels.glob("openforge-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"openforge/configs/{n}.toml" for n in NAMED} <= set(names)

    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)  # what pip install puts in site-packages
    probe = ("import openforge, openforge.presets as p; "
             "print(openforge.__file__); print(','.join(p.list_presets())); "
             "print(p.load_preset('claw').name, p.load_preset('local').engine.kind)")
    env = {**os.environ, "PYTHONPATH": str(target)}
    ran = subprocess.run([sys.executable, "-c", probe], check=False, cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    where, presets, loaded = ran.stdout.splitlines()[-3:]
    assert where.startswith(str(target)), where  # the installed copy, not the checkout
    assert NAMED <= set(presets.split(",")) and loaded == "claw local"
