"""``[verifier] environment_mode = "separate"``: a fresh verifier sandbox (from the task's
verifier environment) over the declared artifacts only, on local and docker."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from environments.taskdir import TaskConfig, TaskSection, write_task
from training.orchestrator.bwrap import bwrap_path
from training.orchestrator.scheduler import Scheduler, new_rollout_id

# 1 only when the handed-over out.txt says hello, the undeclared notes.txt did not come along,
# and the verifier runs in the verifier environment (its marker file), not the agent's.
TEST_SH = """#!/usr/bin/env bash
mkdir -p "${LOGS_DIR:-/logs}/verifier"
r=0
if [ "$(cat out.txt 2>/dev/null)" = hello ] && [ ! -e notes.txt ] && [ -e verifier-env.marker ]; then r=1; fi
echo "$r" > "${LOGS_DIR:-/logs}/verifier/reward.txt"
"""
SOLVE_SH = "#!/usr/bin/env bash\necho hello > out.txt\necho scratch > notes.txt\n"


def separate_task(root: Path) -> Path:
    cfg = TaskConfig(task=TaskSection(name="separate", description="write hello"))
    cfg.verifier.environment_mode = "separate"
    cfg.verifier.artifacts = ["out.txt"]
    cfg.verifier.environment = "verifier-env"
    cfg.verifier.timeout_sec = 30
    files = {
        "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\n",
        "verifier-env/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY verifier-env.marker /app/\n",
        "verifier-env/verifier-env.marker": "",
        "tests/test.sh": TEST_SH,
        "solution/solve.sh": SOLVE_SH,
    }
    return write_task(root / "separate", cfg, "Write hello into out.txt.", files).path


def spec(task: Path, harness: str) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=180)


async def _oracle_and_noop(backend, task: Path) -> dict[str, object]:
    try:
        sched = Scheduler(backend, concurrency=2)
        return {r.harness: r async for r in sched.run([spec(task, "oracle"), spec(task, "noop")])}
    finally:
        await backend.aclose()


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed (apt-get install -y bubblewrap)")
async def test_separate_verifier_on_local(tmp_path: Path, openforge_home: Path) -> None:
    from training.orchestrator.local import LocalBackend

    results = await _oracle_and_noop(LocalBackend(isolation="bubblewrap"), separate_task(tmp_path))
    oracle, noop = results["oracle"], results["noop"]
    assert (oracle.status, oracle.reward) == (Outcome.ok, 1.0), oracle
    assert (noop.status, noop.reward) == (Outcome.ok, 0.0), noop
    assert "verifier_rollout_id" in oracle.checks
    assert (Path(oracle.logs_dir) / "artifacts" / "out.txt").read_text() == "hello\n"
    assert not (Path(oracle.logs_dir) / "artifacts" / "notes.txt").exists()


@pytest.mark.docker
async def test_separate_verifier_on_docker(tmp_path: Path, openforge_home: Path) -> None:
    from tests.training.orchestrator.conftest import skip_because
    from training.orchestrator.docker_backend import (
        DockerBackend,
        docker_unavailable_reason,
    )

    reason = docker_unavailable_reason()
    if reason:
        skip_because("docker separate verifier", reason)
    results = await _oracle_and_noop(DockerBackend(), separate_task(tmp_path))
    assert (results["oracle"].status, results["oracle"].reward) == (Outcome.ok, 1.0), results["oracle"]
    assert (results["noop"].status, results["noop"].reward) == (Outcome.ok, 0.0), results["noop"]
