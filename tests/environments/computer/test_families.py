"""The computer-use families as task dirs: valid, deterministic per seed, registered with the
synthesis procedural backend under domain computer-use, oracle plans use only the harness's
tools, and the verifier scores an untouched workspace 0.0 (no desktop needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from environments.computer.actions import parse_args
from environments.computer.families import FAMILIES, generate
from environments.taskdir import load_task, validate_task
from synthesis.procedural.families import FAMILY_DOMAIN
from synthesis.procedural.families import generate as synth_generate
from synthesis.procedural.render import task_config, task_files

from .conftest import write_family_task


def test_five_families_cover_the_categories() -> None:
    cats = {generate(f, 1).category for f in FAMILIES}
    assert {"files", "spreadsheet", "document", "settings", "multi-app"} <= cats
    assert generate("document-writer", 1).category == "document"


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_family_task_dir(family: str, difficulty: str, tmp_path: Path) -> None:
    task = write_family_task(tmp_path, family, 11, difficulty)
    assert validate_task(task) == []
    cfg = load_task(task).config
    assert cfg.openforge.domain == "computer-use" and cfg.difficulty == difficulty
    assert generate(family, 11, difficulty).instruction == generate(family, 11, difficulty).instruction  # type: ignore[arg-type]
    plan = json.loads((task / "solution" / "actions.json").read_text())["actions"]
    assert plan[-1] == {"tool": "computer", "args": {"action": "terminate", "status": "success"}}
    for step in plan:
        assert step["tool"] in ("computer", "bash", "str_replace_editor")
        if step["tool"] == "computer":
            parse_args(step["args"])
    desktop = json.loads((task / "environment" / "desktop.json").read_text())
    assert desktop["width"] == 1920 and desktop["apps"]
    # the verifier on the untouched workspace (what the no-op agent leaves): 0.0
    ws, logs = tmp_path / "ws", tmp_path / "logs"
    if (task / "environment" / "files").is_dir():
        shutil.copytree(task / "environment" / "files", ws)
    ws.mkdir(exist_ok=True)
    out = subprocess.run(["bash", str(task / "tests" / "test.sh")], cwd=ws, capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "WORKSPACE": str(ws), "LOGS_DIR": str(logs)})
    assert out.returncode == 0, out.stderr
    assert (logs / "verifier" / "reward.txt").read_text().strip() == "0.0"
    assert not all(json.loads((logs / "verifier" / "checks.json").read_text())["checks"].values())


def test_registered_with_the_procedural_backend() -> None:
    ours = {f for f, d in FAMILY_DOMAIN.items() if d == "computer-use"}
    assert ours == set(FAMILIES)
    assert FAMILY_DOMAIN["mail-reply"] == "claw"
    spec = synth_generate("spreadsheet-total", 4)
    assert task_config(spec).openforge.domain == "computer-use"
    assert "solution/actions.json" in task_files(spec) and spec.services == []


@pytest.mark.parametrize("family", ["files-organize", "settings-editor", "spreadsheet-total", "document-write",
                                    "multi-app-reply", "document-writer"])
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_gui_oracles_edit_through_the_apps(family: str, difficulty: str) -> None:
    """These oracles change the workspace only with computer actions; bash only waits/lists."""
    for seed in range(8):
        plan = generate(family, seed, difficulty).actions  # type: ignore[arg-type]
        assert {s["tool"] for s in plan} <= {"computer", "bash"}
        for step in plan:
            if step["tool"] == "bash":
                cmd = step["args"]["command"]
                assert not any(w in cmd.split() for w in ("mv", "rm", "mkdir", "cp", "gsettings", "sed", "echo")), cmd


def test_preferences_plan_follows_the_dialog_focus_order() -> None:
    from environments.computer.families import _preferences_plan

    def keys(values: list[tuple[str, str, object]]) -> list[str]:
        return [s["args"]["text"] for s in _preferences_plan(values) if s["args"].get("action") in ("key", "type")][3:]

    # the margin's column spin button joins the Tab order once the margin is on
    assert keys([("show-right-margin", "", "true"), ("highlight-current-line", "", "true")]) == [
        "Tab Tab Tab Tab", "space", "Tab Tab", "space"]
    assert keys([("highlight-current-line", "", "true"), ("show-line-numbers", "", "true")]) == [
        "Tab", "space", "Tab Tab Tab Tab", "space"]
    # tab width alone: step into the page first; the default width is set via another value
    assert keys([("tab-width", "", 4)]) == ["Tab", "ctrl+Page_Down", "ctrl+a", "4", "Tab"]
    assert keys([("word-wrap", "", "true"), ("tab-width", "", 8)]) == [
        "Tab Tab Tab Tab Tab Tab Tab", "space", "ctrl+Page_Down", "ctrl+a", "7", "Tab", "shift+Tab", "ctrl+a", "8", "Tab"]
