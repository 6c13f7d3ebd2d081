"""The docker backend on a real Docker engine with the real runner (skipped, with the
reason printed, when no engine or base image is available: scripts/start-dockerd.sh and
scripts/build-base-image.sh make both)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from environments.records import Outcome, RolloutSpec
from training.orchestrator.scheduler import Scheduler, new_rollout_id, run_rollouts

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def docker_backend():
    from training.orchestrator.docker_backend import (
        DockerBackend,
        docker_unavailable_reason,
    )

    reason = docker_unavailable_reason()
    if reason:
        print(f"docker tests skipped: {reason}")
        pytest.skip(reason)
    return DockerBackend()  # each test closes it in its own event loop


def spec(task: Path, harness: str, timeout: float = 180, **kw: object) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=timeout, **kw)


async def test_docker_oracle_noop_crash(docker_backend, tiny_task: Path) -> None:
    try:
        specs = [spec(tiny_task, "oracle"), spec(tiny_task, "noop"),
                 spec(tiny_task, "command", harness_options={"argv": ["bash", "-c", "exit 7"]})]
        results = {r.harness: r for r in await run_rollouts(docker_backend, specs, concurrency=3)}
        assert results["oracle"].status == Outcome.ok and results["oracle"].reward == 1.0, results["oracle"]
        assert results["noop"].status == Outcome.ok and results["noop"].reward == 0.0, results["noop"]
        assert results["command"].status == Outcome.infra_error and results["command"].error_kind == "harness_crash"
        assert all(r.isolation == "docker" for r in results.values())
        assert await docker_backend.live_sandboxes() == []
    finally:
        await docker_backend.aclose()


async def test_docker_sandbox_is_locked_down(docker_backend, tiny_task: Path) -> None:
    probe = (
        "import os, socket\n"
        "s = socket.socket(); s.settimeout(2)\n"
        "try:\n    s.connect(('1.1.1.1', 80)); net = 'open'\nexcept OSError:\n    net = 'closed'\n"
        "try:\n    open('/etc/x', 'w'); ro = 'writable'\nexcept OSError:\n    ro = 'read-only'\n"
        "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]\n"
        "uid, host = os.getuid(), socket.gethostname()\n"
        "ok = (net, ro, int(caps, 16), uid > 0, host) == ('closed', 'read-only', 0, True, 'sandbox')\n"
        "open('out.txt', 'w').write('hello' if ok else f'{net} {ro} {caps} uid={uid} host={host}')\n"
    )
    try:
        result = await Scheduler(docker_backend).run_one(
            spec(tiny_task, "command", harness_options={"argv": [sys.executable, "-c", probe]}))
        out = Path(result.logs_dir) / "verifier"
        assert result.reward == 1.0, (result, list(out.iterdir()))
    finally:
        await docker_backend.aclose()


async def test_docker_hang_times_out_and_container_is_removed(docker_backend, tiny_task: Path) -> None:
    try:
        s = spec(tiny_task, "command", timeout=15, harness_options={"argv": ["sleep", "300"]})
        t0 = time.monotonic()
        result = await Scheduler(docker_backend).run_one(s)
        assert result.status == Outcome.timeout
        assert time.monotonic() - t0 < 15 + 5
        assert await docker_backend.live_sandboxes() == []
    finally:
        await docker_backend.aclose()


async def test_docker_build_failure_is_build_failed(docker_backend, tmp_path: Path) -> None:
    from testkit.tasks import make_task

    task = make_task(tmp_path, "badbuild", dockerfile="FROM debian:bookworm-slim\nRUN exit 9\n")
    try:
        result = await Scheduler(docker_backend).run_one(spec(task, "noop"))
        assert result.status == Outcome.infra_error and result.error_kind == "build_failed", result
        assert "Dockerfile" in (result.error or "")
        assert await docker_backend.live_sandboxes() == []
    finally:
        await docker_backend.aclose()


async def test_docker_sandbox_reaches_the_proxy_through_the_relay(docker_backend, tiny_task: Path, sqlite_url: str,
                                                               db_engine) -> None:
    from testkit.fakes.vllm import FakeVLLM
    from tests.training.orchestrator.conftest import PROXY_CALL
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    try:
        async with FakeVLLM() as fake:
            engine = OpenAICompatEngine(fake.base_url)
            try:
                async with ProxyServer(engine, db_url=sqlite_url) as proxy:
                    client = proxy.client()
                    try:
                        s = spec(tiny_task, "command", harness_options={"argv": [sys.executable, "-c", PROXY_CALL]})
                        result = await Scheduler(docker_backend, proxy=client, db=db_engine).run_one(s)
                    finally:
                        await client.aclose()
            finally:
                await engine.aclose()
    finally:
        await docker_backend.aclose()
    assert result.status == Outcome.ok and result.n_calls == 1, result
    assert result.isolation == "docker"


async def test_docker_cancel_removes_running_containers(docker_backend, tmp_path: Path) -> None:
    import asyncio

    from testkit.tasks import make_task
    from training.orchestrator.docker_backend import LABEL

    # The agent budget outlives the test, so only the cancel can end these rollouts.
    task_dir = make_task(tmp_path / "bank", agent_timeout=900)
    specs = [spec(task_dir, "command", timeout=900, harness_options={"argv": ["sleep", "300"]}) for _ in range(2)]
    sched = Scheduler(docker_backend, concurrency=2)

    async def consume() -> None:
        async for _ in sched.run(specs):
            pass

    async def running_containers() -> int:
        found = await docker_backend._call(docker_backend.client.api.containers,
                                           filters={"label": LABEL, "status": "running"})
        ids = {s.rollout_id for s in specs}
        return sum((c.get("Labels") or {}).get("openforge.rollout") in ids for c in found)

    task = asyncio.create_task(consume())
    try:
        for _ in range(600):
            await asyncio.sleep(0.2)
            if task.done() or await running_containers() == 2:
                break
        assert not task.done(), f"the rollouts ended before the cancel: {task}"
        assert await running_containers() == 2
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await docker_backend.live_sandboxes() == []
        assert await running_containers() == 0
    finally:
        await docker_backend.aclose()
