"""The runner end to end on a hand-made task in a plain-process sandbox layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.records import Outcome
from tests.environments.runner.sandbox import make_sandbox, run_runner, write_file_task


@pytest.fixture
def sandbox(tmp_path: Path):
    return make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")


async def test_oracle_scores_one_with_phases_timings_and_checks(sandbox) -> None:
    run = await run_runner(sandbox, "oracle")
    r = run.report
    assert r.status == Outcome.ok and r.reward == 1.0 and r.error_kind is None
    assert r.checks == {"out_txt": True}
    assert "OPENFORGE_PHASE agent_done" in run.stdout
    assert {"agent", "wait_tests", "verifier", "total"} <= set(r.timings)
    assert (sandbox.workspace / "out.txt").read_text() == "hello"
    assert (sandbox.logs / "verifier" / "reward.txt").read_text().strip() == "1.0"


async def test_noop_scores_zero(sandbox) -> None:
    run = await run_runner(sandbox, "noop")
    assert run.report.status == Outcome.ok and run.report.reward == 0.0
    assert run.report.checks == {"out_txt": False}


async def test_crashing_harness_is_infra_harness_crash_and_skips_verifier(sandbox) -> None:
    opts = json.dumps({"template": "bash -c 'echo segfault in harness >&2; exit 3'"})
    run = await run_runner(sandbox, "command", extra=["--harness-options", opts])
    r = run.report
    assert (r.status, r.error_kind) == (Outcome.infra_error, "harness_crash")
    assert "code 3" in (r.error or "") and "segfault" in (r.error or "")
    assert "OPENFORGE_PHASE agent_done" not in run.stdout
    assert r.reward is None


async def test_harness_reporting_context_overflow_is_policy_error(sandbox) -> None:
    opts = json.dumps({"template": "bash -c 'echo Error 400: maximum context length is 2048 tokens >&2; exit 1'"})
    run = await run_runner(sandbox, "command", extra=["--harness-options", opts])
    assert (run.report.status, run.report.error_kind) == (Outcome.policy_error, "context_overflow")
    assert run.report.reward == 0.0


async def test_crashing_verifier_is_verifier_error(tmp_path: Path) -> None:
    task = write_file_task(tmp_path / "src", verifier="#!/usr/bin/env bash\necho 'Traceback: boom' >&2\nexit 2\n")
    run = await run_runner(make_sandbox(task, tmp_path / "sb"), "oracle")
    r = run.report
    assert (r.status, r.error_kind) == (Outcome.infra_error, "verifier_error")
    assert "no reward" in (r.error or "") and "exited 2" in (r.error or "")


async def test_verifier_timeout_is_verifier_error(tmp_path: Path) -> None:
    task = write_file_task(tmp_path / "src", verifier="#!/usr/bin/env bash\nsleep 30\n", verifier_timeout=1)
    run = await run_runner(make_sandbox(task, tmp_path / "sb"), "oracle")
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "verifier_error")
    assert "timed out" in (run.report.error or "")
    assert run.report.timings["total"] < 10


async def test_tests_never_copied_is_verifier_error(tmp_path: Path) -> None:
    task = write_file_task(tmp_path / "src", verifier_timeout=1)
    run = await run_runner(make_sandbox(task, tmp_path / "sb"), "oracle", copy_tests=False)
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "verifier_error")
    assert "did not appear" in (run.report.error or "")


async def test_agent_timeout_kills_harness_then_verifies(tmp_path: Path) -> None:
    task = write_file_task(tmp_path / "src", solve='printf hello > "$WORKSPACE/out.txt"; sleep 60\n', agent_timeout=1)
    sb = make_sandbox(task, tmp_path / "sb")
    run = await run_runner(sb, "oracle")
    assert run.report.status == Outcome.ok and run.report.reward == 1.0
    assert "timed out" in (run.report.error or "")
    assert run.report.timings["agent"] < 6


async def test_unknown_and_missing_harnesses_are_harness_missing(sandbox, monkeypatch) -> None:
    run = await run_runner(sandbox, "no-such-harness")
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "harness_missing")
    run = await run_runner(sandbox, "zeroclaw", env={"PATH": "/usr/bin:/bin"})
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "harness_missing")
    assert "zeroclaw" in (run.report.error or "")


async def test_bad_task_toml_is_start_failed(sandbox) -> None:
    (sandbox.task / "task.toml").write_text("this is = = not toml")
    run = await run_runner(sandbox, "noop")
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "start_failed")
    assert "task.toml" in (run.report.error or "")


async def test_host_credentials_never_reach_the_harness(sandbox) -> None:
    opts = json.dumps({"template": "bash -c 'env > {workspace}/env.txt'"})
    run = await run_runner(sandbox, "command", extra=["--harness-options", opts, "--token", "tok-1"],
                           env={"OPENAI_API_KEY": "sk-real", "ANTHROPIC_API_KEY": "sk-ant-real",
                                "OPENFORGE_ADMIN_KEY": "admin", "MY_SERVICE_SECRET": "s", "KEEP_ME": "1"})
    assert run.report.status == Outcome.ok
    env = dict(line.split("=", 1) for line in (sandbox.workspace / "env.txt").read_text().splitlines() if "=" in line)
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENFORGE_ADMIN_KEY", "MY_SERVICE_SECRET"} & set(env)
    assert env["KEEP_ME"] == "1" and env["WORKSPACE"] == str(sandbox.workspace)
    assert env["LOGS_DIR"] == str(sandbox.logs)


async def test_missing_instruction_still_reports(sandbox) -> None:
    (sandbox.task / "instruction.md").unlink()
    run = await run_runner(sandbox, "noop")
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "start_failed")
    assert "instruction.md" in (run.report.error or "")
