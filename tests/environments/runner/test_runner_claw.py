"""The runner on the claw example tasks (environments/claw/examples): services started from
task.toml with their fixtures, CLAW_URL exported to harness and verifier, services stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from environments.records import Outcome
from tests.environments.runner.sandbox import REPO, make_sandbox, run_runner

EXAMPLES = REPO / "environments" / "claw" / "examples"
TASKS = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file()) if EXAMPLES.is_dir() else []

pytestmark = pytest.mark.skipif(not TASKS, reason="environments/claw/examples has no tasks yet")


def _service_pid_gone(sb) -> bool:
    ready = sb.logs / "services-ready.json"
    pid = json.loads(ready.read_text())["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("task", TASKS)
async def test_oracle_scores_one_and_noop_zero(task: str, tmp_path: Path) -> None:
    sb = make_sandbox(EXAMPLES / task, tmp_path / "oracle")
    run = await run_runner(sb, "oracle")
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.stderr[-2000:])
    assert run.report.checks and all(run.report.checks.values())
    assert run.report.timings["services"] > 0
    assert _service_pid_gone(sb), "the services must be stopped after the rollout"

    sb = make_sandbox(EXAMPLES / task, tmp_path / "noop")
    run = await run_runner(sb, "noop")
    assert run.report.status == Outcome.ok and run.report.reward == 0.0, run.report


async def test_unknown_service_is_service_failed(tmp_path: Path) -> None:
    sb = make_sandbox(EXAMPLES / TASKS[0], tmp_path / "sb")
    toml = sb.task / "task.toml"
    toml.write_text(toml.read_text().replace("[metadata.openforge]", '[metadata.openforge]\nservices = ["nosuchservice"]', 1)
                    .replace('services = [\n    "gmail",\n]', "", 1))
    run = await run_runner(sb, "noop", extra=["--service-timeout", "20"])
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "service_failed"), run.report


async def test_harness_sees_claw_url_and_skills(tmp_path: Path) -> None:
    sb = make_sandbox(EXAMPLES / "claw-gmail-invoice-reply", tmp_path / "sb")
    script = ('bash -c \'echo "$CLAW_URL" > {workspace}/url.txt; '
              'python3 -m environments.claw.call gmail_search "{\\"query\\": \\"INV-2041\\"}" > {workspace}/search.json; '
              # the SKILL.md command, in a shell that dropped PYTHONPATH (as OpenClaw's exec does)
              'env -u PYTHONPATH claw-call gmail_read "{\\"id\\": \\"m-102\\"}" > {workspace}/read.json; '
              'cat {home}/skills/claw-gmail/SKILL.md > {workspace}/skill.md\'')
    opts = json.dumps({"template": script, "skills_dir": "{home}/skills"})
    run = await run_runner(sb, "command", extra=["--harness-options", opts])
    assert run.report.status == Outcome.ok and run.report.reward == 0.0
    url = (sb.workspace / "url.txt").read_text().strip()
    assert url.startswith("http://127.0.0.1:")
    assert "m-102" in (sb.workspace / "search.json").read_text()
    assert json.loads((sb.workspace / "read.json").read_text())["result"]["message"]["id"] == "m-102"
    assert "gmail_send" in (sb.workspace / "skill.md").read_text()
    async with httpx.AsyncClient(timeout=2) as client:
        with pytest.raises(httpx.HTTPError):
            await client.get(url + "/healthz")
