"""Issue 16's interop must-show: the real ``harbor run`` (Harbor 0.26 in ``.venv-harbor``) with
Harbor's own ``oracle`` agent on Harbor's own ``docker`` environment gives reward 1.0, read from
Harbor's own trial ``result.json``, on

- one of our claw tasks as ``openforge tasks import`` + ``openforge tasks export`` write it
  (``claw-kb-answer-ticket``: its services are started by the real ``openforge/claw-base``
  image's entrypoint, its oracle and verifier talk to them over HTTP), and
- a Terminal-Bench-style task (``tests/fixtures/harbor/tb-sort-words``: ``version = "1.0"``,
  ``memory``/``storage`` strings, a ``RUN`` step in its Dockerfile, ``tests/test_outputs.py``
  behind ``tests/test.sh``).

What a Harbor user of our tasks does here first (no public registry is reachable): the claw
task's ``FROM openforge/claw-base:bookworm`` is the self-contained image built from this
checkout (``python -m environments.claw.docker build``), the Terminal-Bench task's ``FROM
debian:bookworm-slim`` is the local base image (scripts/build-base-image.sh) tagged under that
name. Images this test creates are removed afterwards: our docker backend prefers a local
image to its alias, and the claw-base image must not stand in for the plain base there.

The claw task runs with plain ``harbor run`` (its main container on the compose project's own
bridge network, which this dockerd creates). The Terminal-Bench task adds
``--extra-docker-compose scripts/harbor-docker-overlay.yaml``: BuildKit runs a Dockerfile's
``RUN`` in the default ``bridge`` network, which our dockerd (``--bridge=none``) does not have
("network bridge not found"), so the overlay builds on the host network, as our docker backend
builds task images, and runs the container with no network.

Needs the Docker engine (scripts/start-dockerd.sh), its base image, the ``docker compose`` v2
plugin Harbor drives (scripts/install-docker-compose.sh) and ``.venv-harbor``
(scripts/install-harbor.sh); without one of them the test skips, printing why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.training.orchestrator.conftest import skip_because

ROOT = Path(__file__).resolve().parents[1]
CLAW_TASK = ROOT / "environments" / "claw" / "examples" / "claw-kb-answer-ticket"
TB_TASK = ROOT / "tests" / "fixtures" / "harbor" / "tb-sort-words"
TB_FROM = "debian:bookworm-slim"
OVERLAY = ROOT / "scripts" / "harbor-docker-overlay.yaml"

pytestmark = pytest.mark.slow


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False, timeout=timeout)


def _has_image(ref: str) -> bool:
    return _docker("image", "inspect", ref).returncode == 0


@pytest.fixture(scope="module")
def harbor_bin() -> Path:
    from environments.taskdir.real_harbor import HarborUnavailable, harbor_python

    what = "harbor run interop"
    try:
        python = harbor_python()
    except HarborUnavailable as exc:
        skip_because(what, str(exc))
    from training.orchestrator.docker_backend import docker_unavailable_reason

    reason = docker_unavailable_reason()
    if reason:
        skip_because(what, reason)
    compose = _docker("compose", "version")
    if compose.returncode != 0:
        skip_because(what, "no docker compose v2 plugin, which Harbor's docker environment drives "
                     f"(`docker compose version`: {(compose.stderr or compose.stdout).strip()}); "
                     "install it with scripts/install-docker-compose.sh")
    from training.orchestrator.config import OrchestratorSettings

    base = OrchestratorSettings().base_image
    if not _has_image(base):
        skip_because(what, f"no local base image {base} (build it with scripts/build-base-image.sh)")
    return python.parent / "harbor"


@pytest.fixture(scope="module")
def task_images(harbor_bin: Path) -> Iterator[None]:
    """The claw-base image and the Terminal-Bench task's FROM, created for this module only."""
    from environments.claw.docker import BASE_IMAGE, build_base_image
    from training.orchestrator.config import OrchestratorSettings

    base = OrchestratorSettings().base_image
    created: list[str] = []
    try:
        if not _has_image(TB_FROM):
            tagged = _docker("tag", base, TB_FROM)
            assert tagged.returncode == 0, tagged.stderr
            created.append(TB_FROM)
        if not _has_image(BASE_IMAGE):
            started = time.monotonic()
            build_base_image(BASE_IMAGE, base=base)
            created.append(BASE_IMAGE)
            print(f"built {BASE_IMAGE} in {time.monotonic() - started:.0f} s")
        yield
    finally:
        for ref in created:
            _docker("rmi", ref)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, check=False,
                          env=os.environ.copy(), timeout=300)


def _harbor_run(harbor: Path, task_dir: Path, jobs: Path, name: str, *extra: str) -> dict:
    """``harbor run -p TASK -a oracle -e docker``; Harbor's own trial result.json."""
    started = time.monotonic()
    # litellm (imported by Harbor) would try to fetch its model price list; nothing to fetch here
    env = os.environ | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [str(harbor), "run", "-p", str(task_dir), "-a", "oracle", "-e", "docker", "-o", str(jobs),
         "--job-name", name, "-n", "1", "-q", "-y", *extra],
        capture_output=True, text=True, check=False, timeout=900, cwd=jobs.parent, env=env,
    )
    elapsed = time.monotonic() - started
    out = (proc.stdout + proc.stderr)[-4000:]
    trials = [p for p in (jobs / name).glob("*/result.json")]
    assert proc.returncode == 0 and len(trials) == 1, f"harbor run exit {proc.returncode}, trials {trials}:\n{out}"
    result = json.loads(trials[0].read_text())
    print(f"harbor run {task_dir.name}: {elapsed:.0f} s, rewards {(result.get('verifier_result') or {}).get('rewards')}")
    return result


def _assert_reward_one(result: dict) -> None:
    assert result.get("exception_info") is None, result.get("exception_info")
    assert result["agent_info"]["name"] == "oracle"
    assert result["verifier_result"]["rewards"]["reward"] == 1.0, result["verifier_result"]


def test_harbor_run_oracle_on_exported_claw_task(harbor_bin: Path, task_images: None, tmp_path: Path) -> None:
    imported = _cli("tasks", "import", str(CLAW_TASK), "--json")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    exported = _cli("tasks", "export", str(tmp_path / "dataset"), CLAW_TASK.name, "--json")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    [row] = json.loads(exported.stdout)
    assert row["name"] == f"openforge/{CLAW_TASK.name}"
    result = _harbor_run(harbor_bin, Path(row["dir"]), tmp_path / "jobs", "claw")
    _assert_reward_one(result)
    assert result["task_name"] == row["name"]
    # our verifier's per-check metrics are Harbor's rewards too
    checks = {k: v for k, v in result["verifier_result"]["rewards"].items() if k.startswith("check.")}
    assert checks and set(checks.values()) == {1}, checks


def test_harbor_run_oracle_on_terminal_bench_style_task(harbor_bin: Path, task_images: None, tmp_path: Path) -> None:
    task = shutil.copytree(TB_TASK, tmp_path / "dataset" / TB_TASK.name)
    result = _harbor_run(harbor_bin, task, tmp_path / "jobs", "tb", "--extra-docker-compose", str(OVERLAY))
    _assert_reward_one(result)
