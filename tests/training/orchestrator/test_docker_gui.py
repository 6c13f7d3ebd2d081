"""GUI rollouts on the docker backend: a computer-use family (Xvfb + openbox + Mousepad in
``openforge/computer-base``) and a browser-use family (Chromium + the mock shop in
``openforge/browser-base``), both images made by scripts/build-gui-images.sh. Oracle → 1.0,
no-op → 0.0, screenshots saved as PNGs in the rollout's logs, containers removed.

Skipped (reason printed) only when no Docker engine or base image is available; a missing
GUI image is built here (the script is idempotent and content-tagged)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from environments.gui.observation import png_size
from environments.records import Outcome, RolloutResult, RolloutSpec
from environments.taskdir import write_task
from training.orchestrator.runtime import REPO_ROOT
from training.orchestrator.scheduler import Scheduler, new_rollout_id

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def ensure_gui_image(only: str) -> None:
    """Build (or find cached) the GUI base image ``only`` (computer | browser); fail loudly."""
    proc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "build-gui-images.sh")], env={**os.environ, "ONLY": only},
                          capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0:
        pytest.fail(f"build-gui-images.sh ({only}) failed: {(proc.stderr or proc.stdout).strip()[-600:]}")


@pytest.fixture
def docker_backend(tmp_path: Path):
    from training.orchestrator.docker_backend import (
        DockerBackend,
        docker_unavailable_reason,
    )

    reason = docker_unavailable_reason()
    if reason:
        print(f"docker GUI tests skipped: {reason}")
        pytest.skip(reason)
    return DockerBackend(rollouts_dir=tmp_path / "rollouts")  # each test closes it


def _spec(task: Path, harness: str) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=300)


async def _oracle_and_noop(backend, task: Path) -> tuple[RolloutResult, RolloutResult]:
    sched = Scheduler(backend, concurrency=2)
    results = {r.harness: r async for r in sched.run([_spec(task, "oracle"), _spec(task, "noop")])}
    return results["oracle"], results["noop"]


def _screenshots(result: RolloutResult) -> list[Path]:
    return sorted((Path(result.logs_dir) / "agent" / "screenshots").glob("step_*.png"))


async def _oracle_one_noop_zero_with_screenshots(docker_backend, task: Path, size: tuple[int, int]) -> None:
    """Oracle → 1.0 and no-op → 0.0 in docker sandboxes, the oracle's screenshots ``size`` PNGs,
    nothing left behind (closes the backend)."""
    try:
        oracle, noop = await _oracle_and_noop(docker_backend, task)
        assert oracle.status == Outcome.ok and oracle.reward == 1.0, oracle
        assert noop.status == Outcome.ok and noop.reward == 0.0, noop
        assert oracle.isolation == noop.isolation == "docker"
        shots = _screenshots(oracle)
        assert len(shots) >= 3 and shots[0].name == "step_000.png"
        assert all(png_size(p.read_bytes()) == size for p in shots)
        assert await docker_backend.live_sandboxes() == []
    finally:
        await docker_backend.aclose()


async def test_computer_use_document_write_on_docker(docker_backend, tmp_path: Path) -> None:
    from environments.computer.families import generate
    from environments.computer.taskgen import BASE_IMAGE, task_config, task_files

    ensure_gui_image("computer")
    t = generate("document-write", 3, "medium")
    task = write_task(tmp_path / "bank" / t.name, task_config(t), t.instruction, task_files(t)).path
    assert f"FROM {BASE_IMAGE}" in (task / "environment" / "Dockerfile").read_text()
    await _oracle_one_noop_zero_with_screenshots(docker_backend, task, (1920, 1080))


async def test_browser_use_shop_purchase_on_docker(docker_backend, tmp_path: Path) -> None:
    from environments.browser.families import generate
    from environments.browser.taskgen import BASE_IMAGE

    ensure_gui_image("browser")
    t = generate("shop-purchase", 0, None)
    task = write_task(tmp_path / "bank" / t.name, t.config(), t.instruction, t.files()).path
    assert f"FROM {BASE_IMAGE}" in (task / "environment" / "Dockerfile").read_text()
    await _oracle_one_noop_zero_with_screenshots(docker_backend, task, (1280, 720))


async def test_absent_gui_image_is_build_failed_naming_the_script(docker_backend, tmp_path: Path) -> None:
    from testkit.tasks import make_task

    task = make_task(tmp_path, "nogui", dockerfile="FROM openforge/computer-base:no-such-tag\nWORKDIR /app\n")
    try:
        result = await Scheduler(docker_backend).run_one(_spec(task, "noop"))
        assert result.status == Outcome.infra_error and result.error_kind == "build_failed", result
        assert "image not built here (run scripts/build-gui-images.sh)" in (result.error or ""), result.error
        assert await docker_backend.live_sandboxes() == []
    finally:
        await docker_backend.aclose()
