"""The local backend with the real runner (``python -m environments.runner``).

Oracle → 1.0, noop → 0.0, a crashing harness → infra_error/harness_crash, a hanging one →
timeout within timeout + 5 s with its sandbox dir and processes gone; Dockerfile COPY/ENV
honoured under bubblewrap; the proxy reached from a loopback-only sandbox via the relay.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from testkit.tasks import make_task
from training.orchestrator.bwrap import bwrap_path
from training.orchestrator.local import LocalBackend
from training.orchestrator.procs import sandbox_pids
from training.orchestrator.scheduler import Scheduler, new_rollout_id

MODES = ["process"] + (["bubblewrap"] if bwrap_path() else [])


def spec(task: Path, harness: str, timeout: float = 120, **kw: object) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=timeout, **kw)


@pytest.mark.parametrize("mode", MODES)
async def test_oracle_scores_one_and_noop_zero(tiny_task: Path, mode: str, openforge_home: Path) -> None:
    backend = LocalBackend(isolation=mode)
    try:
        sched = Scheduler(backend, concurrency=2)
        results = {r.harness: r async for r in sched.run([spec(tiny_task, "oracle"), spec(tiny_task, "noop")])}
        assert results["oracle"].status == Outcome.ok and results["oracle"].reward == 1.0, results["oracle"]
        assert results["noop"].status == Outcome.ok and results["noop"].reward == 0.0, results["noop"]
        for r in results.values():
            assert r.isolation == mode and r.backend == "local"
            base = openforge_home / "rollouts" / r.rollout_id
            assert not (base / "sandbox").exists()  # sandbox removed
            assert (base / "logs" / "verifier" / "reward.txt").is_file()  # logs kept
            assert "OPENFORGE_RESULT" in (base / "runner.log").read_text()
            assert r.timings["start_latency"] > 0
        assert await backend.live_sandboxes() == []
    finally:
        await backend.aclose()


async def test_crashing_harness_is_infra_error(tiny_task: Path) -> None:
    backend = LocalBackend()
    try:
        crash = spec(tiny_task, "command", harness_options={"argv": ["bash", "-c", "echo boom >&2; exit 3"]})
        result = await Scheduler(backend).run_one(crash)
        assert result.status == Outcome.infra_error
        assert result.error_kind == "harness_crash"
        assert not result.trainable
    finally:
        await backend.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_hanging_harness_times_out_and_leaves_nothing(tiny_task: Path, mode: str, openforge_home: Path) -> None:
    backend = LocalBackend(isolation=mode)
    try:
        # The harness detaches a grandchild into its own session: it must die too.
        hang = spec(tiny_task, "command", timeout=4,
                    harness_options={"argv": ["bash", "-c", "setsid sleep 300 & sleep 300"]})
        t0 = time.monotonic()
        result = await Scheduler(backend).run_one(hang)
        elapsed = time.monotonic() - t0
        assert result.status == Outcome.timeout, result
        assert elapsed < 4 + 5
        assert sandbox_pids(hang.rollout_id) == []
        assert not (openforge_home / "rollouts" / hang.rollout_id / "sandbox").exists()
        assert await backend.live_sandboxes() == []
    finally:
        await backend.aclose()


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed (apt-get install -y bubblewrap)")
async def test_bubblewrap_honours_dockerfile_copy_env_workdir(tmp_path: Path, db_engine) -> None:
    dockerfile = (
        "FROM python:3.11-slim\n"
        "ENV GREETING=hello\n"
        "WORKDIR /srv/job\n"
        "COPY data.txt /opt/openforge-test-data/data.txt\n"
        "COPY seed.txt ./seed.txt\n"
        "RUN apt-get install -y jq\n"
    )
    solve = (
        "#!/usr/bin/env bash\nset -e\n"
        "[ \"$(pwd)\" = /srv/job ]\n"
        "[ \"$(cat /opt/openforge-test-data/data.txt)\" = payload ]\n"
        "[ \"$(cat seed.txt)\" = seed ]\n"
        "echo \"$GREETING\" > out.txt\n"
    )
    task = make_task(tmp_path, "copyenv", dockerfile=dockerfile,
                     extra={"environment/data.txt": "payload\n", "environment/seed.txt": "seed\n", "solution/solve.sh": solve})
    backend = LocalBackend(isolation="bubblewrap")
    try:
        sched = Scheduler(backend, db=db_engine)
        s = spec(task, "oracle")
        result = await sched.run_one(s)
        assert result.reward == 1.0, result
        notes = sched.sandbox_notes[s.rollout_id]
        assert any("RUN apt-get install -y jq" in n for n in notes)
        from storage.db import session_scope
        from storage.models import Rollout

        with session_scope(db_engine) as db:
            row = db.get(Rollout, s.rollout_id)
            assert row.status == "ok" and row.reward == 1.0 and row.backend == "local"
            assert row.seconds and row.seconds > 0
            assert any("RUN apt-get" in n for n in row.meta["sandbox_notes"])
    finally:
        await backend.aclose()


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed (apt-get install -y bubblewrap)")
async def test_bubblewrap_sandbox_cannot_see_the_task_tests_or_the_bank(tmp_path: Path) -> None:
    solve = (
        "#!/usr/bin/env bash\n"
        f"if ls /tests/test.sh || ls {tmp_path}/peek/tests || ls \"$OPENFORGE_HOME\"; then exit 0; fi\n"
        "echo hello > out.txt\n"
    )
    task = make_task(tmp_path, "peek", extra={"solution/solve.sh": solve})
    backend = LocalBackend(isolation="bubblewrap")
    try:
        result = await Scheduler(backend).run_one(spec(task, "oracle"))
        assert result.reward == 1.0, result
    finally:
        await backend.aclose()


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
async def test_bubblewrap_agent_is_not_root_yet_owns_its_files(tmp_path: Path, openforge_home: Path) -> None:
    import os

    # The agent runs as uid/gid 1000 inside (no root banners, xterm can own its pty) on a host
    # named "sandbox", and what it writes is the orchestrator's own file outside (the uid maps
    # to ours).
    solve = ("#!/usr/bin/env bash\n"
             "[ \"$(id -u):$(id -g)\" = 1000:1000 ] && [ -O . ] && [ \"$(hostname)\" = sandbox ] && echo hello > out.txt\n")
    task = make_task(tmp_path, "uid", extra={"solution/solve.sh": solve})
    backend = LocalBackend(isolation="bubblewrap")
    try:
        result = await Scheduler(backend).run_one(spec(task, "oracle"))
        assert result.reward == 1.0, result
        reward_file = Path(result.logs_dir) / "verifier" / "reward.txt"
        assert reward_file.stat().st_uid == os.getuid()
    finally:
        await backend.aclose()
