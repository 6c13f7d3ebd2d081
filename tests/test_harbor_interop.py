"""Interop with the real Harbor (issue 16): every task we synthesize (each procedural family,
each difficulty) and every example task loads with Harbor's own task model and passes its
``Task.is_valid_dir``; the reward.json every verifier we generate writes (claw, procedural,
computer-use, LLM judge) is read by Harbor's own verifier parser as the metrics we read.
Harbor runs in its own Python 3.12 env (.venv-harbor, made by
``scripts/install.sh --dev``); without it the test skips with the reason printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environments.computer.verifier import render_test_sh as computer_test_sh
from environments.taskdir import TaskConfig, TaskSection, load_task, write_task
from environments.taskdir.real_harbor import (
    HarborUnavailable,
    harbor_parse,
    harbor_python,
    harbor_read_rewards,
)
from environments.verifiers.llm_judge import JudgeResult, write_reward
from environments.verifiers.reward_files import read_reward
from synthesis.procedural.families import FAMILIES, generate
from synthesis.procedural.render import task_config, task_files
from synthesis.procedural.spec import DIFFICULTIES
from synthesis.procedural.verifier import render_test_sh as procedural_test_sh

EXAMPLES = Path(__file__).parents[1] / "environments" / "claw" / "examples"


@pytest.fixture(scope="module")
def harbor() -> Path:
    try:
        return harbor_python()
    except HarborUnavailable as exc:
        print(f"SKIP reason: {exc}")
        pytest.skip(str(exc))


def _synthesized(root: Path) -> list[Path]:
    out = []
    for family in sorted(FAMILIES):
        for difficulty in DIFFICULTIES:
            spec = generate(family, 7, difficulty)
            out.append(write_task(root / f"{family}-{difficulty}", task_config(spec, run_id="interop"),
                                  spec.instruction, task_files(spec)).path)
    return out


def _separate_verifier_task(root: Path) -> Path:
    """Our issue-14 separate verifier ([verifier] environment = "<dir>") as we write it."""
    cfg = TaskConfig(task=TaskSection(name="separate", description="d"))
    cfg.verifier.environment_mode = "separate"
    cfg.verifier.environment = "verifier-env"
    return write_task(root / "separate", cfg, "Write hello.", {
        "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
        "verifier-env/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
        "tests/test.sh": "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n"}).path


def test_harbor_loads_every_task_we_write(harbor: Path, tmp_path: Path) -> None:
    dirs = [*_synthesized(tmp_path / "synth"), _separate_verifier_task(tmp_path)]
    dirs += sorted(p for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())
    assert len(dirs) >= 3 * len(FAMILIES) + 4
    parsed = harbor_parse(dirs, python=harbor)
    refused = {str(d): parsed[str(d)].get("error") for d in dirs if not parsed[str(d)]["ok"]}
    assert refused == {}
    invalid = [str(d) for d in dirs if not parsed[str(d)]["valid_dir"]]
    assert invalid == []
    for d in dirs:  # what Harbor read is what we meant
        ours, theirs = load_task(d).config, parsed[str(d)]["config"]
        assert theirs["task"]["name"] == ours.task.name and "/" in ours.task.name
        assert theirs["agent"]["timeout_sec"] == ours.agent.timeout_sec
        assert theirs["verifier"]["timeout_sec"] == ours.verifier.timeout_sec
        assert theirs["metadata"].get("openforge", {}).get("domain") == ours.openforge.domain


def _run_verifier(script_text: str, root: Path, files: dict[str, str] | None = None) -> Path:
    """Run a rendered tests/test.sh (claw services unreachable) and return its logs dir."""
    ws, logs = root / "ws", root / "logs"
    ws.mkdir(parents=True)
    for rel, text in (files or {}).items():
        (ws / rel).write_text(text)
    (root / "test.sh").write_text(script_text)
    env = {**os.environ, "CLAW_URL": "http://127.0.0.1:9", "LOGS_DIR": str(logs), "WORKSPACE": str(ws),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(["bash", str(root / "test.sh")], cwd=ws, env=env, capture_output=True, text=True,
                         timeout=60, check=False)
    assert (logs / "verifier" / "reward.json").is_file(), out.stdout + out.stderr
    return logs


def test_harbor_reads_the_reward_json_of_every_verifier_we_generate(harbor: Path, tmp_path: Path) -> None:
    example = min(p for p in EXAMPLES.iterdir() if (p / "tests" / "test.sh").is_file())
    logs = {
        "claw": _run_verifier((example / "tests" / "test.sh").read_text(), tmp_path / "claw"),
        "procedural": _run_verifier(procedural_test_sh([
            {"name": "reply", "kind": "state", "service": "gmail", "collection": "messages", "where": {}, "min": 1},
            {"name": "out", "kind": "file", "path": "out.txt", "contains": ["ok"]}]), tmp_path / "proc",
            {"out.txt": "ok\n"}),
        "computer": _run_verifier(computer_test_sh([{"name": "exists", "kind": "exists", "path": "a.txt"},
                                                    {"name": "absent", "kind": "exists", "path": "b.txt"}]),
                                  tmp_path / "computer", {"a.txt": "x"}),
    }
    write_reward(tmp_path / "judge" / "verifier", JudgeResult(reward=1.0, score=0.9, passed=True, rationale="r", raw="{}"),
                 None)
    logs["judge"] = tmp_path / "judge"
    old = tmp_path / "old" / "verifier"  # what our verifiers wrote before: Harbor refuses it
    old.mkdir(parents=True)
    (old / "reward.json").write_text(json.dumps({"reward": 1.0, "checks": {"a": True}, "error": None}))
    parsed = harbor_read_rewards([*logs.values(), old.parent], python=harbor)
    assert not parsed[str(old.parent)]["ok"] and "Non-numeric" in parsed[str(old.parent)]["error"]
    for kind, d in logs.items():
        theirs = parsed[str(d)]
        assert theirs["ok"], (kind, theirs)
        ours = read_reward(d / "verifier")
        assert theirs["rewards"] == ours.metrics, kind  # every key Harbor takes is a metric of ours
        assert theirs["rewards"]["reward"] == ours.reward
        assert {k.removeprefix("check.") for k in theirs["rewards"] if k.startswith("check.")} == set(ours.checks), kind
    assert read_reward(logs["procedural"] / "verifier").checks == {"reply": False, "out": True}
    assert read_reward(logs["computer"] / "verifier").checks == {"exists": True, "absent": False}
    assert json.loads((logs["claw"] / "verifier" / "checks.json").read_text())["error"]  # services down: the detail
