"""Compose files of Harbor tasks as the docker backend reads them (training/orchestrator/
compose.py): sidecar ``build``, ``depends_on`` (order, conditions), ``healthcheck``, and one-line
refusals naming the key. No Docker engine needed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from training.orchestrator.compose import Build, ComposeError, read_compose, start_order
from training.orchestrator.runtime import runner_command

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"


def _compose(tmp_path: Path, text: str) -> Path:
    env = tmp_path / "environment"
    (env / "api").mkdir(parents=True, exist_ok=True)
    (env / "api" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    path = env / "docker-compose.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_fixture_builds_orders_and_gates() -> None:
    plan = read_compose(FIXTURES / "compose-build-depends" / "environment" / "docker-compose.yaml")
    assert [s.name for s in start_order(plan)] == ["seed", "api"]
    api = next(s for s in plan.sidecars if s.name == "api")
    assert api.image is None and api.build is not None and api.build.context.name == "api"
    assert api.build.args == {"VALUE": "forty-two-built"}
    assert api.depends_on == {"seed": "service_completed_successfully"}
    assert api.healthcheck is not None and api.healthcheck["interval"] == 500_000_000 and api.healthcheck["retries"] == 60
    assert plan.main.depends_on == {"api": "service_healthy"}


def test_depends_on_forms_and_durations(tmp_path: Path) -> None:
    plan = read_compose(_compose(tmp_path, """\
        services:
          main: {image: debian:bookworm-slim, depends_on: [db]}
          db:
            image: postgres:16
            healthcheck: {test: "pg_isready", interval: 1m30s, start_period: 2.5s}
          web: {build: {context: api, dockerfile: Dockerfile}, depends_on: {db: {condition: service_healthy}}}
          quiet: {image: busybox, healthcheck: {disable: true}}
        """))
    assert plan.main.depends_on == {"db": "service_started"}
    db = next(s for s in plan.sidecars if s.name == "db")
    assert db.healthcheck == {"test": ["CMD-SHELL", "pg_isready"], "interval": 90_000_000_000, "start_period": 2_500_000_000}
    assert next(s for s in plan.sidecars if s.name == "quiet").healthcheck == {"test": ["NONE"]}
    web = next(s for s in plan.sidecars if s.name == "web")
    assert web.build == Build(context=(tmp_path / "environment" / "api").resolve())
    assert [s.name for s in start_order(plan)] == ["db", "web", "quiet"]


@pytest.mark.parametrize(("body", "message"), [
    ("main: {image: x}\n  a: {image: y, depends_on: [b]}\n  b: {image: z, depends_on: [a]}",
     "services: depends_on cycle a -> b -> a"),
    ("main: {image: x, depends_on: [ghost]}", "services.main.depends_on: unknown service 'ghost'"),
    ("main: {image: x}\n  a: {image: y, depends_on: {main: {condition: service_healthy}}}",
     "services.a.depends_on.main: only service_started (main starts first)"),
    ("main: {image: x}\n  a: {image: y, depends_on: {main: {condition: service_ready}}}",
     "services.a.depends_on.main.condition: 'service_ready' is not one of"),
    ("main: {image: x}\n  a: {build: ../..}", "services.a.build.context: '../..' leaves environment/"),
    ("main: {image: x}\n  a: {build: {context: api, dockerfile: Nope}}",
     "services.a.build.dockerfile: 'Nope': no such file in 'api'"),
    ("main: {image: x}\n  a: {image: y, healthcheck: {test: 'true', interval: soon}}",
     "services.a.healthcheck.interval: 'soon' is not a duration"),
    ("main: {image: x}\n  a: {command: 'true'}", "services.a: needs 'build' or 'image'"),
])
def test_refusals_are_one_line_naming_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = _compose(tmp_path, "services:\n  " + body + "\n")
    with pytest.raises(ComposeError) as err:
        read_compose(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_runner_waits_for_the_ready_file(tmp_path: Path) -> None:
    import asyncio

    from environments.records import RolloutSpec
    from environments.runner.rollout import _Stop, _wait_for

    cmd = runner_command(RolloutSpec(rollout_id="r", task_dir="/task", harness="oracle"), python="python",
                         task_dir="/task", workspace="/app", logs_dir="/logs", tests_dir="/tests", solution_dir=None,
                         agent_timeout=None, verifier_timeout=None, wait_for="/logs/.ready")
    assert cmd[cmd.index("--wait-for") + 1] == "/logs/.ready"
    ready = tmp_path / ".ready"

    async def later() -> float:
        async def write() -> None:
            await asyncio.sleep(0.3)
            ready.write_text("ready\n")
        task = asyncio.create_task(write())
        waited = await _wait_for(ready, timeout=10)
        await task
        return waited

    assert asyncio.run(later()) >= 0.3 and not ready.exists()
    with pytest.raises(_Stop, match="did not appear within 0s"):
        asyncio.run(_wait_for(tmp_path / "never", timeout=0.05))
