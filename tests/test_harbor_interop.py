"""Interop with the real Harbor (issue 16): every task we synthesize (each procedural family,
each difficulty) and every example task loads with Harbor's own task model and passes its
``Task.is_valid_dir``. Harbor runs in its own Python 3.12 env (.venv-harbor, made by
``scripts/install.sh --dev``); without it the test skips with the reason printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.taskdir import TaskConfig, TaskSection, load_task, write_task
from environments.taskdir.real_harbor import (
    HarborUnavailable,
    harbor_parse,
    harbor_python,
)
from synthesis.procedural.families import FAMILIES, generate
from synthesis.procedural.render import task_config, task_files
from synthesis.procedural.spec import DIFFICULTIES

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
