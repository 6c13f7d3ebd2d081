"""``openforge rollout`` (cli/commands/rollout.py over training.orchestrator.single)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app


def test_rollout_json_line_oracle_and_hang(tiny_task: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["rollout", str(tiny_task), "--harness", "oracle", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["status"] == "ok" and doc["reward"] == 1.0
    for key in ("error_kind", "n_calls", "seconds", "rollout_id", "isolation", "logs_dir"):
        assert key in doc
    res = runner.invoke(app, ["rollout", str(tiny_task), "--harness", "command", "--timeout", "3", "--json",
                              "--harness-options", json.dumps({"argv": ["sleep", "300"]})])
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["status"] == "timeout" and doc["seconds"] < 3 + 5
    assert not (Path(doc["logs_dir"]).parent / "sandbox").exists()


def test_rollout_rejects_a_bad_task_dir(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["rollout", str(tmp_path / "nope"), "--harness", "noop", "--json"])
    assert res.exit_code == 1
    assert "does not exist" in res.output
