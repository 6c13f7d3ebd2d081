"""The red-team suite (issue 14): every attack of ``attacks.ATTACKS`` as a ``command``-harness
rollout on local (bubblewrap), docker and the fake Kubernetes cluster; 0 may succeed, and
every rollout must come back classified (the orchestrator keeps serving)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.redteam import ATTACKS, Context, Verdict, run_attacks
from training.orchestrator.bwrap import bwrap_path

pytestmark = pytest.mark.slow


def check(verdicts: list[Verdict], backend: str, *, expected: int) -> None:
    for v in verdicts:
        print(f"{backend:11s} {v.attack:24s} {'broken' if v.broken else 'SUCCEEDED'}  {v.outcome}  {v.why}")
    assert len(verdicts) == expected, [v.attack for v in verdicts]
    succeeded = [(v.attack, v.why, v.outcome) for v in verdicts if not v.broken]
    assert not succeeded, succeeded


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed (apt-get install -y bubblewrap)")
async def test_no_attack_succeeds_on_local(tmp_path: Path, redteam_ctx: Context, redteam_proxy, db_engine) -> None:
    from training.orchestrator.local import LocalBackend

    backend = LocalBackend(isolation="bubblewrap")
    try:
        verdicts = await run_attacks(backend, tmp_path / "tasks", redteam_ctx, proxy=redteam_proxy, db=db_engine)
    finally:
        await backend.aclose()
    check(verdicts, "local", expected=len(ATTACKS))
    assert set(await backend.live_sandboxes()) <= {"other-rollout"}  # the planted one


@pytest.mark.docker
async def test_no_attack_succeeds_on_docker(tmp_path: Path, redteam_ctx: Context, redteam_proxy, db_engine) -> None:
    from tests.training.orchestrator.conftest import skip_because
    from training.orchestrator.docker_backend import (
        DockerBackend,
        docker_unavailable_reason,
    )

    reason = docker_unavailable_reason()
    if reason:
        skip_because("docker red-team", reason)
    backend = DockerBackend()
    try:
        verdicts = await run_attacks(backend, tmp_path / "tasks", redteam_ctx, proxy=redteam_proxy, db=db_engine)
    finally:
        await backend.aclose()
    check(verdicts, "docker", expected=len(ATTACKS))


async def test_no_attack_succeeds_on_the_fake_cluster(tmp_path: Path, redteam_ctx: Context, redteam_proxy, db_engine,
                                                     cluster, k8s_backend) -> None:
    backend = k8s_backend(proxy=redteam_proxy)
    verdicts = await run_attacks(backend, tmp_path / "tasks", redteam_ctx, proxy=redteam_proxy, db=db_engine,
                                 on_task=cluster.image)
    check(verdicts, "kubernetes", expected=len(ATTACKS))


async def test_the_judge_sees_attacks_succeed_without_isolation(tmp_path: Path, redteam_ctx: Context) -> None:
    """The plain-process fallback isolates nothing: there the same attacks must be judged as
    succeeding (else the suite could not fail)."""
    from training.orchestrator.local import LocalBackend

    # deterministic attacks only: the daemon attacks race the verifier's start, and on a loaded
    # machine an unisolated daemon may simply lose that race (a flaky self-check proves nothing)
    names = ("read-host-secrets", "read-other-tasks")
    backend = LocalBackend(isolation="process")
    try:
        verdicts = await run_attacks(backend, tmp_path / "tasks", redteam_ctx,
                                     attacks=[a for a in ATTACKS if a.name in names])
    finally:
        await backend.aclose()
    for v in verdicts:
        print(f"process     {v.attack:24s} {'broken' if v.broken else 'SUCCEEDED'}  {v.outcome}  {v.why}")
    assert {v.attack for v in verdicts if not v.broken} == set(names)
