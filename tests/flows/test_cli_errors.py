"""Bad inputs through the ``openforge`` CLI: one line naming the input, a non-zero exit, no traceback
(cli/errors.py); tracebacks only under ``--debug``. Every case is refused before Prefect starts
or a model loads (the flows' own input checks, ``flows/checks.py``, run first in the CLI), so the
table runs in seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from openforge.settings import get_settings

REPO = Path(__file__).resolve().parents[2]
HELLO = str(REPO / "tests/fixtures/harbor/hello-world")
#: A PostgreSQL URL nothing listens on (port 1 refuses at once); its password must never be printed.
DEAD_PG = "postgresql+psycopg://u:hunter2@127.0.0.1:1/db"


def _bad_toml(tmp: Path) -> str:
    path = tmp / "broken.toml"
    path.write_text("[train\nlr = 1\n")
    return str(path)


def _bad_task_toml(tmp: Path) -> str:
    """The hello-world task with a task.toml that does not parse."""
    task = tmp / "bad-task"
    shutil.copytree(HELLO, task)
    (task / "task.toml").write_text('version = "1.0"\n[agent\ntimeout_sec = 1\n')
    return str(task)


def _bad_value_toml(tmp: Path) -> str:
    path = tmp / "bad-value.toml"
    path.write_text('[train]\nlr = "fast"\n')
    return str(path)


# (id, argv (``{tmp}``-formatted or built from tmp), OPENFORGE_DB or None, strings the one line must name)
CASES = [
    ("unknown preset", ["train", "rl", "--preset", "nosuch"], None, ["nosuch", "known:"]),
    ("bad --set value", ["train", "rl", "--set", "train.lr=abc"], None, ["train.lr", "'abc'"]),
    ("unknown --set key", ["train", "rl", "--set", "train.nosuch=1"], None, ["train.nosuch", "unknown key"]),
    ("--set without =", ["train", "rl", "--set", "trainlr"], None, ["trainlr", "KEY=VALUE"]),
    ("--set out of range, pipeline", ["pipeline", "--set", "rollout.concurrency=0"], None, ["rollout.concurrency"]),
    ("preset file: bad TOML", ["train", "rl", "--preset", _bad_toml], None, ["broken.toml", "invalid TOML"]),
    ("preset file: bad value", ["train", "rl", "--dry-run", "--preset", _bad_value_toml], None,
     ["bad-value.toml", "train.lr", "'fast'"]),
    ("unknown training kind", ["train", "xx"], None, ["'xx'", "sft or rl"]),
    ("missing SFT data", ["train", "sft", "--data", "{tmp}/none.parquet"], None, ["none.parquet", "openforge distill"]),
    ("unknown preset, distill", ["distill", "--preset", "nosuch"], None, ["nosuch"]),
    ("unknown synthesis domain", ["synthesize", "--domain", "nosuch", "--n", "1"], None, ["nosuch", "claw"]),
    ("missing synthesis pool", ["synthesize", "--pool", "{tmp}/pool.jsonl", "--n", "1"], None, ["pool.jsonl"]),
    ("unknown harness, rollout", ["rollout", HELLO, "--harness", "nosuch"], None, ["nosuch", "react"]),
    ("unknown harness, evaluate", ["evaluate", "--harness", "nosuch"], None, ["nosuch", "react"]),
    ("missing task dir, rollout", ["rollout", "{tmp}/no-task", "--harness", "oracle"], None, ["no-task", "does not exist"]),
    ("harness options not an object", ["rollout", HELLO, "--harness", "oracle", "--harness-options", "[1]"], None,
     ["--harness-options", "JSON object"]),
    ("missing path, tasks validate", ["tasks", "validate", "{tmp}/no-task"], None, ["no-task", "does not exist"]),
    ("missing path, tasks import", ["tasks", "import", "{tmp}/no-task"], None, ["no-task", "does not exist"]),
    ("unknown task id", ["tasks", "show", "nosuch"], None, ["nosuch", "tasks ls"]),
    ("unparsable OPENFORGE_DB", ["db", "status"], "notaurl", ["notaurl", "OPENFORGE_DB"]),
    ("unknown DB dialect", ["init"], "foo://x", ["foo://x", "OPENFORGE_DB"]),
    ("bad port in OPENFORGE_DB", ["tasks", "ls"], "postgresql://u:hunter2@h:notaport/db", ["notaport", "OPENFORGE_DB"]),
    ("unreachable PostgreSQL, db status", ["db", "status"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    ("unreachable PostgreSQL, tasks ls", ["tasks", "ls"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    ("unreachable PostgreSQL, train rl", ["train", "rl"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    # synthesis: every option is a parameter of the deployed flow, refused by its typed model or its check
    ("unknown synthesis backend", ["synthesize", "--backend", "gpt"], None, ["--backend", "'gpt'", "procedural"]),
    ("unknown sandbox backend, synthesize", ["synthesize", "--sandbox", "vm"], None, ["--sandbox", "'vm'", "docker"]),
    ("unknown quality judge", ["synthesize", "--judge", "human"], None, ["--judge", "'human'", "heuristic"]),
    ("dedup threshold out of range", ["synthesize", "--tau", "2"], None, ["--tau", "2"]),
    ("unknown test harness, synthesize", ["synthesize", "--k-rollouts", "1", "--test-harness", "nosuch"], None,
     ["nosuch", "react"]),
    ("openai backend without endpoint", ["synthesize", "--backend", "openai"], None, ["--backend openai", "--base-url"]),
    ("unreachable PostgreSQL, synthesize", ["synthesize", "--n", "1"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    # flows' parameters refused by their typed models, named by the option
    ("GRPO steps below 1", ["train", "rl", "--steps", "0"], None, ["--steps", "0"]),
    ("k below 1, evaluate", ["evaluate", "--k", "0"], None, ["--k", "0"]),
    ("unknown purpose, distill", ["distill", "--purpose", "xx"], None, ["--purpose", "'xx'"]),
    ("unknown preset, pipeline", ["pipeline", "--preset", "nosuch"], None, ["nosuch", "known:"]),
    ("bad --set value, evaluate", ["evaluate", "--set", "rollout.timeout_sec=soon"], None, ["rollout.timeout_sec"]),
    # an empty bank: the flow would find nothing to do
    ("empty bank, distill", ["distill"], None, ["no verified tasks", "openforge synthesize"]),
    ("empty bank, train rl", ["train", "rl"], None, ["no verified tasks", "openforge synthesize"]),
    ("empty bank, evaluate", ["evaluate"], None, ["no verified tasks", "openforge synthesize"]),
    # task dirs and rollouts
    ("bad task.toml, rollout", ["rollout", _bad_task_toml, "--harness", "oracle"], None, ["task.toml"]),
    ("bad task.toml, tasks validate", ["tasks", "validate", _bad_task_toml], None, ["task.toml"]),
    ("uninitialised task DB, export-atif", ["export-atif", "r1", "--out", "{tmp}/atif"], None,
     ["no tables yet", "openforge init"]),
    ("bad --verify, model prepare", ["model", "prepare", "--verify", "bits"], None, ["--verify"]),
    # the commands that became flow runs (flows/bank.py, flows/rollout.py): refused before Prefect starts
    ("unknown purpose, tasks import", ["tasks", "import", HELLO, "--purpose", "xx"], None, ["--purpose", "'xx'"]),
    ("unknown sandbox backend, tasks verify", ["tasks", "verify", "--backend", "vm"], None,
     ["--backend", "'vm'", "docker"]),
    ("unreachable PostgreSQL, tasks verify", ["tasks", "verify"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    ("unreachable PostgreSQL, tasks import", ["tasks", "import", HELLO], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    ("unreachable PostgreSQL, init", ["init"], DEAD_PG, ["127.0.0.1", "OPENFORGE_DB"]),
    ("unparsable OPENFORGE_DB, tasks export", ["tasks", "export", "{tmp}/out"], "notaurl", ["notaurl", "OPENFORGE_DB"]),
    ("unknown sandbox backend, rollout", ["rollout", HELLO, "--harness", "oracle", "--backend", "vm"], None,
     ["--backend", "'vm'"]),
    ("unknown preset, rollout", ["rollout", HELLO, "--harness", "oracle", "--preset", "nosuch"], None,
     ["nosuch", "known:"]),
    ("timeout not positive, rollout", ["rollout", HELLO, "--harness", "oracle", "--timeout", "0"], None,
     ["--timeout", "0"]),
]


def _argv(argv: list, tmp: Path) -> list[str]:
    return [a(tmp) if callable(a) else a.format(tmp=tmp) for a in argv]


def _assert_one_line_error(output: str, exit_code: int, names: list[str]) -> None:
    assert exit_code != 0, output
    assert "Traceback" not in output and 'File "' not in output, output
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith(("error: ", "/")), output
    for name in names:
        assert name in lines[0], (name, output)
    assert "hunter2" not in output


@pytest.mark.parametrize(("argv", "db", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_naming_it(argv: list, db: str | None, names: list[str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if db is not None:
        monkeypatch.setenv("OPENFORGE_DB", db)
        get_settings.cache_clear()
    res = CliRunner().invoke(app, _argv(argv, tmp_path))
    _assert_one_line_error(res.output, res.exit_code, names)
    if res.exit_code == 2:
        assert isinstance(res.exception, SystemExit)


def test_the_installed_entry_point_prints_one_line_too(tmp_path: Path) -> None:
    """The real process (Typer's __call__, not CliRunner): OPENFORGE_DB that does not parse."""
    env = {**os.environ, "OPENFORGE_DB": "notaurl", "OPENFORGE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "cli", "db", "status"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    _assert_one_line_error(proc.stderr, proc.returncode, ["notaurl", "OPENFORGE_DB"])


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    res = CliRunner().invoke(app, ["--debug", "train", "rl", "--preset", "nosuch"])
    assert res.exit_code == 1
    from openforge.presets import PresetError

    assert isinstance(res.exception, PresetError) and "nosuch" in str(res.exception)
    monkeypatch.setenv("OPENFORGE_DEBUG", "1")
    res = CliRunner().invoke(app, ["train", "rl", "--preset", "nosuch"])
    assert isinstance(res.exception, PresetError)


def test_an_unexpected_exception_is_named_with_a_hint_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug is not dressed up as a user error: its type and message, a pointer to --debug, exit 1."""
    import storage.admin

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("boom in db_status")

    monkeypatch.setattr(storage.admin, "db_status", boom)
    res = CliRunner().invoke(app, ["db", "status"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.strip() == ("error: unexpected RuntimeError: boom in db_status (a bug or an unhandled case: "
                                  "re-run as `openforge --debug ...` for the traceback and report it)")
    res = CliRunner().invoke(app, ["--debug", "db", "status"])
    assert isinstance(res.exception, RuntimeError)
