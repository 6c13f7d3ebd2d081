"""The CLI's init / db / tasks commands, run as the installed ``openforge`` entry point. ``init``
and ``tasks import|verify|export`` are flow runs on the embedded Prefect API: this module gives
them a Prefect home of its own (``PREFECT_HOME``), never the user's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HARBOR = Path(__file__).parents[1] / "fixtures" / "harbor" / "hello-world"
OPENFORGE = [sys.executable, "-m", "cli"]


@pytest.fixture(scope="module")
def _module_prefect_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prefect-home")


@pytest.fixture(autouse=True)
def _prefect_home(_module_prefect_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(_module_prefect_home))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OPENFORGE, *args], capture_output=True, text=True, env=os.environ.copy(), cwd=cwd, timeout=120)


def test_init_is_idempotent_creates_the_paid_api_limits_and_db_status_reports(
        openforge_home: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))  # a fresh embedded Prefect API
    first = run("init", "--json")
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout)
    assert info["home"] == str(openforge_home.resolve()) and info["revision"]
    assert [line.split(" (")[0] for line in info["limits"]] == [
        "limit anthropic-api", "limit anthropic-api-rate", "limit openai-api", "limit openai-api-rate"]
    assert all(line.endswith(": created") for line in info["limits"]), info["limits"]
    again = run("init", "--json")
    assert again.returncode == 0, again.stderr
    assert all(line.endswith(": kept") for line in json.loads(again.stdout)["limits"])
    status = json.loads(run("db", "status", "--json").stdout)
    assert status["revision"] == status["head"]
    assert status["tables"]["tasks"]["rows"] == 0


def test_validate_malformed_dir_exits_1_with_one_line_per_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad-task"
    shutil.copytree(HARBOR, bad)
    (bad / "instruction.md").unlink()
    (bad / "tests" / "test.sh").chmod(0o644)  # no problem: Harbor runs it with bash
    (bad / "environment" / "Dockerfile").unlink()
    result = run("tasks", "validate", str(bad), str(HARBOR))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{bad}: instruction.md: missing",
        f"{bad}: environment/Dockerfile: missing (or environment/docker-compose.yaml, or [environment] docker_image)",
    ]
    assert "Traceback" not in result.stderr
    ok = run("tasks", "validate", str(HARBOR))
    assert ok.returncode == 0 and "1 task dir(s) valid" in ok.stdout


def test_import_then_ls_and_show(tmp_path: Path) -> None:
    result = run("tasks", "import", str(HARBOR), "--json")
    assert result.returncode == 0, result.stderr
    imported = json.loads(result.stdout)["imported"]
    assert [row["id"] for row in imported] == ["hello-world"]
    rows = json.loads(run("tasks", "ls", "--json").stdout)
    assert rows == [{"id": "hello-world", "domain": None, "purpose": "rl", "status": "imported", "dir": imported[0]["dir"]}]
    assert json.loads(run("tasks", "ls", "--status", "building", "--json").stdout) == []
    shown = json.loads(run("tasks", "show", "hello-world", "--json").stdout)
    assert "Hello, world!" in shown["instruction"]
    missing = run("tasks", "show", "nope")
    assert missing.returncode == 1 and "no task 'nope'" in missing.stderr


def test_import_of_bad_dir_keeps_existing_bank(tmp_path: Path) -> None:
    assert run("tasks", "import", str(HARBOR)).returncode == 0
    bad = tmp_path / "broken"
    bad.mkdir()
    result = run("tasks", "import", str(bad))
    assert result.returncode == 1
    assert f"{bad}: task.toml: missing" in result.stdout
    assert [r["id"] for r in json.loads(run("tasks", "ls", "--json").stdout)] == ["hello-world"]


def test_every_command_has_help() -> None:
    for args in (["--help"], ["init", "--help"], ["db", "status", "--help"], ["tasks", "validate", "--help"],
                 ["tasks", "import", "--help"], ["tasks", "ls", "--help"], ["tasks", "show", "--help"],
                 ["tasks", "verify", "--help"], ["tasks", "export", "--help"]):
        result = run(*args)
        assert result.returncode == 0 and "Usage" in result.stdout, args
