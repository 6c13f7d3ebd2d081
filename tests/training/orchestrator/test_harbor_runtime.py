"""Harbor runtime semantics on the real local backend (issue 16): env tables resolved on the
host and given only to the phase that owns them (never written to the task dir or the DB),
the healthcheck before the agent, artifacts collected into the rollout's logs, and one-line
refusals for what the backend cannot run (image-only, compose, Windows), multi-step tasks
run step by step with ``multi_step_reward_strategy`` and ``min_reward``."""

from __future__ import annotations

import asyncio
import shutil
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import select

from environments.taskdir import load_task
from openforge.settings import get_settings
from storage.db import make_engine, session_scope
from storage.models import Rollout
from training.orchestrator.backend import SandboxError
from training.orchestrator.single import rollout_once

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"
SECRET = "s3cret-from-the-host-91f2"

TOML = """\
schema_version = "1.4"
artifacts = ["/app/out.txt", { source = "/logs/agent", destination = "agent-logs" }]

[task]
name = "acme/env-phases"

[verifier]
timeout_sec = 60.0

[verifier.env]
EXPECTED = "hello-test"
VERIFIER_TOKEN = "${OPENFORGE_TEST_VERIFIER_TOKEN}"

[agent]
timeout_sec = 60.0

[solution.env]
GREETING = "${OPENFORGE_TEST_GREETING:-hello}"

[environment.env]
APP_MODE = "${OPENFORGE_TEST_APP_MODE:-test}"

[environment.healthcheck]
command = "test -n \\"$APP_MODE\\""
interval_sec = 0.2
retries = 2
"""

SOLVE = """\
#!/bin/bash
# The oracle sees [solution].env and [environment].env, never [verifier].env.
printf '%s-%s' "$GREETING" "$APP_MODE" > "${WORKSPACE:-/app}/out.txt"
printf '%s' "${VERIFIER_TOKEN:-none}" > "${WORKSPACE:-/app}/agent-saw-token.txt"
"""

TEST = """\
#!/bin/bash
LOGS="${LOGS_DIR:-/logs}/verifier"; mkdir -p "$LOGS"
ok=1
[ "$(cat "${WORKSPACE:-/app}/out.txt" 2>/dev/null)" = "$EXPECTED" ] || ok=0
[ "$(cat "${WORKSPACE:-/app}/agent-saw-token.txt" 2>/dev/null)" = none ] || ok=0
[ "$VERIFIER_TOKEN" = "@SECRET@" ] || ok=0
[ -z "${GREETING:-}" ] || ok=0
echo $ok > "$LOGS/reward.txt"
""".replace("@SECRET@", SECRET)


def _task(root: Path) -> Path:
    task = root / "env-phases"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(TOML)
    (task / "instruction.md").write_text("Write the greeting.\n")
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    (task / "tests" / "test.sh").write_text(TEST)
    (task / "solution" / "solve.sh").write_text(SOLVE)
    return task


def test_env_tables_go_to_their_phase_and_nowhere_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENFORGE_TEST_VERIFIER_TOKEN", SECRET)
    task = _task(tmp_path)
    doc = asyncio.run(rollout_once(str(task), "oracle", backend="local"))
    assert (doc["status"], doc["reward"]) == ("ok", 1.0), doc
    logs = Path(doc["logs_dir"])
    assert (logs / "artifacts" / "app" / "out.txt").read_text() == "hello-test"
    assert (logs / "artifacts" / "agent-logs").is_dir()
    assert doc["timings"].get("runner_healthcheck") is not None
    # the resolved secret is in neither the task dir nor the DB
    assert not any(SECRET in p.read_text(errors="replace") for p in task.rglob("*") if p.is_file()
                   and p.name != "test.sh")
    engine = make_engine(get_settings().db_url)
    try:
        with session_scope(engine) as s:
            row = s.scalars(select(Rollout).where(Rollout.id == doc["rollout_id"])).one()
            assert SECRET not in repr((row.meta, row.error, row.timings))
    finally:
        engine.dispose()


def test_a_missing_host_variable_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENFORGE_TEST_VERIFIER_TOKEN", raising=False)
    doc = asyncio.run(rollout_once(str(_task(tmp_path)), "oracle", backend="local", record=False))
    assert doc["status"] == "infra_error" and doc["error_kind"] == "start_failed"
    assert "verifier.env.VERIFIER_TOKEN: ${OPENFORGE_TEST_VERIFIER_TOKEN} is not set on the host" in doc["error"]


def test_unhealthy_environment_fails_before_the_agent(tmp_path: Path) -> None:
    task = _task(tmp_path)
    (task / "task.toml").write_text(TOML.replace('VERIFIER_TOKEN = "${OPENFORGE_TEST_VERIFIER_TOKEN}"', "")
                                    .replace('command = "test -n \\"$APP_MODE\\""', 'command = "exit 3"'))
    doc = asyncio.run(rollout_once(str(task), "oracle", backend="local", record=False))
    assert (doc["status"], doc["error_kind"]) == ("infra_error", "start_failed")
    assert "[environment.healthcheck] 'exit 3' failed 2 time(s), last: exit 3" in doc["error"]
    assert not (Path(doc["logs_dir"]) / "agent" / "harness.log").exists() or "out.txt" not in doc["error"]


@pytest.mark.parametrize(("name", "why"), [
    ("image-only", "image-only tasks need the docker backend (--backend docker), not local"),
])
def test_what_local_cannot_run_is_refused_in_one_line(name: str, why: str, tmp_path: Path) -> None:
    doc = asyncio.run(rollout_once(str(FIXTURES / name), "oracle", backend="local", record=False))
    assert doc["status"] == "infra_error" and why in doc["error"] and "\n" not in doc["error"], doc


def test_compose_only_task_is_refused_off_docker(tmp_path: Path) -> None:
    task = tmp_path / "compose-only"
    shutil.copytree(FIXTURES / "compose", task)
    (task / "environment" / "Dockerfile").unlink()
    (task / "environment" / "docker-compose.yaml").write_text(textwrap.dedent("""\
        services:
          main:
            image: debian:bookworm-slim
        """))
    assert load_task(task).compose_file is not None
    doc = asyncio.run(rollout_once(str(task), "oracle", backend="local", record=False))
    assert "compose tasks need the docker backend (--backend docker), not local" in doc["error"]


def test_windows_is_refused_in_one_line() -> None:
    from environments.taskdir import TaskDirError

    with pytest.raises(TaskDirError, match="environment.os: 'windows' tasks are not supported"):
        load_task(FIXTURES / "windows")
    assert SandboxError  # the backends refuse the same way when handed one (task_support.check_supported)


def test_fields_the_backend_cannot_honour_are_noted_not_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENFORGE_TEST_VERIFIER_TOKEN", "x")
    doc = asyncio.run(rollout_once(str(FIXTURES / "env-and-runtime-fields"), "oracle", backend="local", record=False))
    assert doc["status"] == "ok" and doc["reward"] == 1.0, doc
    notes = " | ".join(doc["sandbox_notes"])
    assert "[agent] user = 'agent'" in notes and "[verifier] user = 'root'" in notes
    assert "[environment] gpus = 1: no GPUs are given to local sandboxes" in notes


def test_multi_step_task_runs_step_by_step(tmp_path: Path) -> None:
    oracle = asyncio.run(rollout_once(str(FIXTURES / "multi-step"), "oracle", backend="local", record=False))
    assert (oracle["status"], oracle["reward"]) == ("ok", 1.0), oracle
    assert oracle["checks"]["steps"] == {"write": {"reward": 1.0}, "append": {"reward": 1.0}}
    logs = Path(oracle["logs_dir"])
    assert (logs / "verifier" / "steps" / "write" / "reward.txt").read_text().strip() == "1"
    assert {"runner_agent_write", "runner_agent_append"} <= set(oracle["timings"])
    noop = asyncio.run(rollout_once(str(FIXTURES / "multi-step"), "noop", backend="local", record=False))
    # step "write" scores 0 < min_reward 1.0: "append" never runs; the mean is over the verified steps
    assert (noop["status"], noop["reward"]) == ("ok", 0.0) and list(noop["checks"]["steps"]) == ["write"], noop


def test_multi_step_mean_and_final(tmp_path: Path) -> None:
    task = tmp_path / "ms"
    shutil.copytree(FIXTURES / "multi-step", task)
    # the second step's oracle does nothing: mean 0.5, final 0.0
    (task / "steps" / "append" / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    doc = asyncio.run(rollout_once(str(task), "oracle", backend="local", record=False))
    assert doc["reward"] == 0.5 and doc["metrics"] == {"reward": 0.5}, doc
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('multi_step_reward_strategy = "mean"', 'multi_step_reward_strategy = "final"'))
    assert asyncio.run(rollout_once(str(task), "oracle", backend="local", record=False))["reward"] == 0.0


def test_step_tests_and_solutions_are_hidden_from_the_agent(tmp_path: Path) -> None:
    from training.orchestrator.layout import lay_out

    dirs = lay_out(tmp_path / "sb", FIXTURES / "multi-step", "oracle")
    assert (dirs.task / "steps" / "write" / "instruction.md").is_file()
    assert not (dirs.task / "steps" / "write" / "tests").exists()
    assert not (dirs.task / "steps" / "write" / "solution").exists()
    assert (dirs.solution / "steps" / "write" / "solve.sh").is_file()


def test_users_are_passed_on_where_the_runner_can_switch_and_noted_elsewhere(tmp_path: Path) -> None:
    from training.orchestrator.runtime import runner_command
    from training.orchestrator.task_support import not_honoured, task_users

    task = load_task(FIXTURES / "users")
    agent, verifier, notes = task_users(task, 1000)  # docker with a root runner
    assert (agent, verifier, notes) == ("agent", "checker", [])
    assert not [n for n in not_honoured(task, "docker", switches_users=True) if "user" in n]
    assert any("[agent] user = 'agent'" in n for n in not_honoured(task, "local"))  # no uid switch there
    from environments.records import RolloutSpec

    cmd = runner_command(RolloutSpec(rollout_id="r", task_dir=str(task.path), harness="oracle"), python="python",
                         task_dir="/task", workspace="/app", logs_dir="/logs", tests_dir="/tests", solution_dir=None,
                         agent_timeout=None, verifier_timeout=None, agent_jail="uid", agent_uid=1000,
                         agent_user=agent, verifier_user=verifier)
    assert cmd[cmd.index("--agent-user") + 1] == "agent" and cmd[cmd.index("--verifier-user") + 1] == "checker"

    root = tmp_path / "root-agent"
    shutil.copytree(FIXTURES / "users", root)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('user = "agent"', 'user = "root"'))
    agent, verifier, notes = task_users(load_task(root), 1000)
    assert agent is None and verifier == "checker"
    assert notes == ["[agent] user = 'root': the agent runs as the jail's uid 1000, never root (it could reach the verifier)"]
