"""Task directories: validation lines, write/load round trip, content hash, Harbor import."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from environments.taskdir import (
    TaskConfig,
    TaskDirError,
    TaskSection,
    content_sha,
    import_task,
    load_task,
    validate_task,
    write_task,
)

HARBOR = Path(__file__).parents[2] / "fixtures" / "harbor" / "hello-world"


def _write_valid(dest: Path):
    config = TaskConfig(task=TaskSection(name="demo", description="d"))
    config.openforge.domain = "claw"
    return write_task(
        dest,
        config,
        "Do the thing.",
        {
            "environment/Dockerfile": "FROM debian:bookworm-slim\n",
            "tests/test.sh": "#!/bin/sh\necho 1 > \"${LOGS_DIR:-/logs}/verifier/reward.txt\"\n",
            "solution/solve.sh": "#!/bin/sh\ntrue\n",
        },
    )


def test_write_then_load_round_trip(tmp_path: Path) -> None:
    task = _write_valid(tmp_path / "demo")
    again = load_task(task.path)
    assert again.config.task.name == "openforge/demo"  # Harbor's org/name
    assert again.config.openforge.domain == "claw"
    assert again.instruction.strip() == "Do the thing."
    assert again.config.openforge.content_sha == content_sha(task.path)
    raw = tomllib.loads((task.path / "task.toml").read_text())
    assert raw["metadata"]["openforge"]["domain"] == "claw" and "domain" not in raw["metadata"]
    assert "agent" not in raw and "environment" not in raw  # defaults nobody set are not written
    assert (task.path / "tests" / "test.sh").stat().st_mode & 0o111


def test_content_sha_changes_with_content_not_location(tmp_path: Path) -> None:
    a = _write_valid(tmp_path / "a")
    b_path = tmp_path / "elsewhere" / "a"
    shutil.copytree(a.path, b_path)
    assert content_sha(a.path) == content_sha(b_path)
    (b_path / "instruction.md").write_text("Do another thing.\n")
    assert content_sha(a.path) != content_sha(b_path)
    (b_path / "instruction.md").write_text("Do the thing.\n")
    (b_path / "tests" / "test.sh").chmod(0o644)
    assert content_sha(a.path) != content_sha(b_path)


def test_malformed_dir_reports_every_problem_one_line_each(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    (bad / "tests").mkdir(parents=True)
    (bad / "task.toml").write_text('schema_version = "1.1"\n[task]\nname = "x"\n[agent]\ntimeout_sec = "soon"\n')
    (bad / "environment").mkdir()
    (bad / "environment" / "tools.json").write_text('[{"name": "t"}]')
    lines = [str(p) for p in validate_task(bad)]
    assert f"{bad}: task.toml: agent.timeout_sec: Input should be a valid number, unable to parse string as a number" in lines
    assert f"{bad}: instruction.md: missing" in lines
    assert f"{bad}: environment/Dockerfile: missing (or environment/docker-compose.yaml, or [environment] docker_image)" in lines
    assert f"{bad}: tests/test.sh: missing" in lines
    assert f"{bad}: environment/tools.json: tools[0].input_schema: missing" in lines
    assert all("\n" not in line for line in lines)


@pytest.mark.parametrize(
    ("toml_text", "expected"),
    [
        ("[task\nname=1", "task.toml: unparsable TOML"),
        ('schema_version = 2\n[task]\nname="x"', "task.toml: schema_version: Input should be a valid string"),
        ('schema_version = "1.4"\n[task]\nname="x"\n[metadata.openforge]\npurpose="play"',
         "task.toml: metadata.openforge.purpose"),
        ('schema_version = "1.1"\n[task]\nname="x"\n[metadata]\ncontent_sha="a"\npurpose="play"',
         "task.toml: metadata.openforge.purpose"),  # a task we wrote before: our keys read from [metadata]
    ],
)
def test_task_toml_problems(tmp_path: Path, toml_text: str, expected: str) -> None:
    shutil.copytree(HARBOR, tmp_path / "t")
    (tmp_path / "t" / "task.toml").write_text(toml_text)
    lines = [str(p) for p in validate_task(tmp_path / "t")]
    assert any(expected in line for line in lines), lines


def test_missing_dir_is_one_problem(tmp_path: Path) -> None:
    assert [str(p) for p in validate_task(tmp_path / "nope")] == [f"{tmp_path / 'nope'}: directory: does not exist"]


def test_load_raises_with_all_problems(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskDirError) as info:
        load_task(tmp_path / "empty")
    assert len(info.value.problems) == 4  # task.toml, instruction.md, Dockerfile, tests/test.sh


def test_harbor_1_0_import_keeps_harbors_meaning(tmp_path: Path) -> None:
    assert validate_task(HARBOR) == []
    task = import_task(HARBOR, tmp_path / "bank")
    raw = tomllib.loads((task.path / "task.toml").read_text())
    assert raw["schema_version"] == "1.0" and "version" not in raw
    assert "task" not in raw and task.config.task.name == "hello-world"
    assert raw["metadata"]["tags"] == ["file-operations", "hello"]  # free-form: kept where it was
    assert raw["metadata"]["difficulty"] == "easy"
    assert raw["agent"]["timeout_sec"] == 120.0
    assert task.config.openforge.content_sha == content_sha(task.path)
    assert (task.path / "solution" / "solve.sh").stat().st_mode & 0o111


def test_invalid_import_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(HARBOR, src)
    (src / "instruction.md").unlink()
    with pytest.raises(TaskDirError, match="instruction.md: missing"):
        import_task(src, tmp_path / "bank")
    assert not (tmp_path / "bank").exists() or not any((tmp_path / "bank").iterdir())


def test_tasks_we_wrote_before_still_load_with_our_keys(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    shutil.copytree(HARBOR, legacy)
    (legacy / "task.toml").write_text(
        'schema_version = "1.1"\n[task]\nname = "legacy"\n[metadata]\ndomain = "claw"\ncategory = "email"\n'
        'services = ["gmail"]\npurpose = "sft"\nfamily = "mail-reply"\ncontent_sha = "x"\n')
    cfg = load_task(legacy).config
    assert (cfg.openforge.domain, cfg.openforge.services, cfg.openforge.purpose) == ("claw", ["gmail"], "sft")
    assert cfg.category == "email" and cfg.metadata == {"category": "email"}
    assert cfg.openforge.model_extra == {"family": "mail-reply"}
    again = import_task(legacy, tmp_path / "bank")
    raw = tomllib.loads((again.path / "task.toml").read_text())
    assert raw["metadata"] == {"category": "email", "openforge": {
        "domain": "claw", "purpose": "sft", "services": ["gmail"], "family": "mail-reply",
        "content_sha": again.config.openforge.content_sha}}


def test_the_claw_examples_keep_their_content_sha() -> None:
    examples = Path(__file__).parents[3] / "environments" / "claw" / "examples"
    for task in sorted(p for p in examples.iterdir() if (p / "task.toml").is_file()):
        cfg = load_task(task).config
        assert cfg.openforge.content_sha == content_sha(task) and cfg.openforge.services, task.name
