"""GUI rollouts as pods: a computer-use family (Xvfb desktop) and a browser-use family
(Chromium on a mock site) through the kubernetes backend on the fake cluster score what
they score on the local backend (oracle 1.0, no-op 0.0), screenshots included."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.computer.desktop import missing_binaries
from tests.environments.browser.conftest import chromium_problem
from tests.environments.browser.conftest import write_family_task as write_browser_task
from tests.environments.computer.conftest import GUI_BINARIES
from tests.environments.computer.conftest import (
    write_family_task as write_computer_task,
)
from tests.training.orchestrator.kubernetes.test_fake_cluster import compare_with_local

pytestmark = pytest.mark.slow


async def test_computer_use_pods_match_local(cluster, k8s_backend, tmp_path: Path) -> None:
    missing = missing_binaries(GUI_BINARIES)
    if missing:
        pytest.skip(f"desktop binaries missing: {', '.join(missing)} (scripts/install.sh --dev installs them)")
    task = write_computer_task(tmp_path / "bank", "document-write")
    results = await compare_with_local(cluster, k8s_backend, [task], ("oracle", "noop"))
    oracle = next(r for r in results if r.harness == "oracle")
    assert list((Path(oracle.logs_dir) / "agent" / "screenshots").glob("*.png"))  # came back from the pod


async def test_browser_use_pods_match_local(cluster, k8s_backend, tmp_path: Path) -> None:
    problem = chromium_problem()
    if problem:
        pytest.skip(problem)
    task, _ = write_browser_task(tmp_path / "bank", "shop-purchase")
    results = await compare_with_local(cluster, k8s_backend, [task], ("oracle", "noop"))
    oracle = next(r for r in results if r.harness == "oracle")
    assert list((Path(oracle.logs_dir) / "agent" / "screenshots").glob("*.png"))
