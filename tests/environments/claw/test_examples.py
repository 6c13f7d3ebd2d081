"""The example claw tasks: valid task dirs, in sync with their builder, and end to end
against real services: oracle → 1.0, no-op → 0.0, reset → 0.0, wrong work → 0.0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from environments.claw.docker import dockerfile_for
from environments.claw.examples.build import EXAMPLES, HERE, write_examples
from environments.claw.process import ClawServer
from environments.claw.taskgen import PRELUDE, verifier_script
from environments.claw.tools import tools_json_text
from environments.taskdir import content_sha, load_task, validate_task

ROOT = Path(__file__).resolve().parents[3]
TASKS = [HERE / ex.task_id for ex in EXAMPLES]
IDS = [ex.task_id for ex in EXAMPLES]


def test_there_are_single_and_multi_service_examples():
    counts = sorted(len(load_task(t).config.openforge.services) for t in TASKS)
    assert len(TASKS) >= 3 and counts[0] == 1 and counts[-1] >= 2 and sum(c >= 2 for c in counts) >= 2


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_example_is_a_valid_claw_task(task):
    assert validate_task(task) == []
    cfg = load_task(task).config
    services = cfg.openforge.services
    assert cfg.openforge.domain == "claw" and services
    assert (task / "environment" / "Dockerfile").read_text() == dockerfile_for(services)
    assert (task / "environment" / "tools.json").read_text() == tools_json_text(services)
    assert sorted(p.stem for p in (task / "environment" / "fixtures").glob("*.json")) == sorted(services)
    assert cfg.openforge.content_sha == content_sha(task)
    for script in ("tests/test.sh", "solution/solve.sh"):
        assert os.access(task / script, os.X_OK)
    assert "LOGS_DIR:-/logs" in (task / "tests" / "test.sh").read_text()


def test_checked_in_examples_match_the_builder(tmp_path):
    for built in write_examples(tmp_path):
        assert content_sha(built.path) == content_sha(HERE / built.id), f"{built.id}: run python -m environments.claw.examples.build"


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_verifier_is_the_one_prelude_around_its_checks(example):
    """The copy of the verifier prelude in each example is the one in environments.claw.taskgen."""
    text = (HERE / example.task_id / "tests" / "test.sh").read_text()
    assert text == verifier_script(example.task_id, example.checks)
    head, prelude, _ = text.partition(PRELUDE)
    assert prelude and head.endswith("python3 - <<'PYEOF'\n"), f"{example.task_id}: prelude differs from taskgen.PRELUDE"


def _run(script: Path, srv: ClawServer | None, tmp_path: Path) -> subprocess.CompletedProcess:
    logs, workspace = tmp_path / "logs", tmp_path / "app"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CLAW_URL", "PORT")}
    env.update(srv.env() if srv else {"CLAW_URL": "http://127.0.0.1:9"})
    env.update(LOGS_DIR=str(logs), WORKSPACE=str(workspace), PYTHONPATH=str(ROOT),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return subprocess.run(["bash", str(script)], cwd=workspace, env=env, capture_output=True, text=True, timeout=120)


def _verify(task: Path, srv: ClawServer | None, tmp_path: Path) -> dict:
    out = _run(task / "tests" / "test.sh", srv, tmp_path)
    assert out.returncode == 0, out.stderr
    reward = float((tmp_path / "logs" / "verifier" / "reward.txt").read_text())
    flat = json.loads((tmp_path / "logs" / "verifier" / "reward.json").read_text())
    detail = json.loads((tmp_path / "logs" / "verifier" / "checks.json").read_text())
    assert detail["reward"] == reward  # reward.json numeric only (Harbor), details in checks.json
    assert flat == {"reward": reward, **{f"check.{k}": int(v) for k, v in detail["checks"].items()}}
    return detail


def _post(srv: ClawServer, path: str, body: dict) -> dict:
    req = urllib.request.Request(srv.url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_oracle_scores_one_noop_zero_and_reset_zero(task, tmp_path):
    with ClawServer.for_task(task) as srv:
        noop = _verify(task, srv, tmp_path)
        assert noop["reward"] == 0.0 and noop["error"] is None and not all(noop["checks"].values())
        solved = _run(task / "solution" / "solve.sh", srv, tmp_path)
        assert solved.returncode == 0, solved.stdout + solved.stderr
        oracle = _verify(task, srv, tmp_path)
        assert oracle["reward"] == 1.0 and all(oracle["checks"].values()), oracle
        assert _post(srv, "/reset", {})["ok"] is True
        assert _verify(task, srv, tmp_path)["reward"] == 0.0


def test_verifier_without_services_scores_zero(tmp_path):
    detail = _verify(TASKS[0], None, tmp_path)
    assert detail["reward"] == 0.0 and "URLError" in detail["error"]


@pytest.mark.slow
def test_verifiers_reject_wrong_work(tmp_path):
    gmail = HERE / "claw-gmail-invoice-reply"
    with ClawServer.for_task(gmail) as srv:
        # right reply, but also mails the wrong person and never labels: 0.0
        _post(srv, "/gmail/reply", {"id": "m-101", "body": "Total USD 4,350.00, due 2026-03-15."})
        _post(srv, "/gmail/send", {"to": ["billing@northwind.test"], "subject": "fyi", "body": "x"})
        detail = _verify(gmail, srv, tmp_path)
        assert detail["reward"] == 0.0
        assert {k for k, v in detail["checks"].items() if not v} == {"labeled_billing", "nobody_else_emailed"}
    meeting = HERE / "claw-ticket-meeting-crm"
    with ClawServer.for_task(meeting) as srv:
        # meeting at a busy time, activity logged on the look-alike account Quillsoft: 0.0
        _post(srv, "/calendar/create_event", {"title": "T-1042 follow-up", "start": "2026-03-04T09:00:00Z",
                                              "end": "2026-03-04T09:30:00Z", "attendees": ["priya.raman@quillworks.test"]})
        _post(srv, "/crm/log_activity", {"account_id": "ACC-3", "type": "meeting", "subject": "T-1042"})
        detail = _verify(meeting, srv, tmp_path)
        assert detail["reward"] == 0.0
        assert {k for k, v in detail["checks"].items() if not v} == {
            "meeting_at_earliest_free_slot", "crm_meeting_logged_on_quillworks", "crm_contact_is_requester",
            "no_activity_on_other_accounts"}


@pytest.mark.slow
def test_web_verifier_rejects_the_beta_date(tmp_path):
    task = HERE / "claw-web-release-todo"
    with ClawServer.for_task(task) as srv:
        (tmp_path / "app").mkdir()
        (tmp_path / "app" / "answer.txt").write_text("2026-01-05\n")
        _post(srv, "/notes/add_todo", {"title": "Upgrade staging to Acme DB 4.2", "due": "2026-01-19"})
        detail = _verify(task, srv, tmp_path)
        assert detail["reward"] == 0.0
        assert {k for k, v in detail["checks"].items() if not v} == {"answer_file_has_ga_date", "todo_due_14_days_after_ga"}
