"""Issue 16's must-show on the real docker backend: ``openforge tasks import <dataset dir>``
→ ``openforge tasks verify --backend docker`` → ``openforge rollout --harness oracle`` gives
1.0 on an image-only task (``[environment] docker_image``, no Dockerfile) and on compose
tasks (main only, main + an ``api`` sidecar reached by its service name, a sidecar built from
source with ``depends_on`` conditions); ``[agent] user``
and ``[verifier] user`` are the image's users the oracle and the verifier run as."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.orchestrator.conftest import skip_because

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"
TASKS = ["image-only", "compose", "compose-sidecar"]


@pytest.fixture(autouse=True)
def _docker() -> None:
    from training.orchestrator.docker_backend import docker_unavailable_reason

    reason = docker_unavailable_reason()
    if reason:
        skip_because("Harbor tasks on docker", reason)


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, check=False,
                          env=os.environ.copy(), timeout=timeout)


def test_import_verify_rollout_on_docker(tmp_path: Path) -> None:
    ds = tmp_path / "dataset"
    for name in TASKS:
        shutil.copytree(FIXTURES / name, ds / name)
    imported = _cli("tasks", "import", str(ds), "--json")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    rows = {r["id"]: r["dir"] for r in json.loads(imported.stdout)["imported"]}
    assert sorted(rows) == sorted(TASKS)
    assert {r["status"] for r in json.loads(_cli("tasks", "ls", "--json").stdout)} == {"imported"}
    verified = _cli("tasks", "verify", "--backend", "docker", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    for row in json.loads(verified.stdout):
        assert row["passed"] and (row["oracle"], row["noop"]) == (1.0, 0.0), row
    assert {r["status"] for r in json.loads(_cli("tasks", "ls", "--json").stdout)} == {"verified"}
    for name in ("image-only", "compose-sidecar"):
        run = _cli("rollout", rows[name], "--harness", "oracle", "--backend", "docker", "--json")
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout.strip().splitlines()[-1])
        assert (doc["status"], doc["reward"]) == ("ok", 1.0), doc
    leftover = subprocess.run(["docker", "ps", "-aq", "--filter", "label=openforge.compose-service"],
                              capture_output=True, text=True, check=False)
    assert leftover.stdout.strip() == ""


def test_unsupported_compose_is_one_line(tmp_path: Path) -> None:
    task = tmp_path / "compose-build-outside"
    shutil.copytree(FIXTURES / "compose-sidecar", task)
    compose = task / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text().replace("    image: python:3.12-slim\n", "    build: ../tests\n"))
    run = _cli("rollout", str(task), "--harness", "oracle", "--backend", "docker", "--json")
    doc = json.loads(run.stdout.strip().splitlines()[-1])
    assert doc["status"] == "infra_error" and "services.api.build.context: '../tests' leaves environment/" \
        in doc["error"], doc


def test_compose_build_and_depends_on_on_docker() -> None:
    """A sidecar built from environment/api (build args), started after a one-shot service
    completed, and main's depends_on service_healthy holding the oracle back until it serves."""
    for harness, reward in (("oracle", 1.0), ("noop", 0.0)):
        run = _cli("rollout", str(FIXTURES / "compose-build-depends"), "--harness", harness, "--backend", "docker", "--json")
        doc = json.loads(run.stdout.strip().splitlines()[-1])
        assert (doc["status"], doc["reward"]) == ("ok", reward), doc


def test_multi_step_on_docker() -> None:
    run = _cli("rollout", str(FIXTURES / "multi-step"), "--harness", "oracle", "--backend", "docker", "--json")
    doc = json.loads(run.stdout.strip().splitlines()[-1])
    assert (doc["status"], doc["reward"]) == ("ok", 1.0) and set(doc["checks"]["steps"]) == {"write", "append"}, doc


def test_agent_and_verifier_users_on_docker() -> None:
    if os.getuid() != 0:
        skip_because("[agent]/[verifier] user on docker", "switching users needs the root runner (docker as root)")
    run = _cli("rollout", str(FIXTURES / "users"), "--harness", "oracle", "--backend", "docker", "--json")
    doc = json.loads(run.stdout.strip().splitlines()[-1])
    assert (doc["status"], doc["reward"]) == ("ok", 1.0), doc
    assert not [n for n in doc.get("sandbox_notes", []) if "user" in n], doc
