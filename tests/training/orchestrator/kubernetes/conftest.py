"""A fake cluster whose kubelet runs pods through bubblewrap, and kubernetes backends on it.

``cluster`` is :class:`testkit.fakes.kubernetes.cluster.LocalCluster` (the fake API server
with the :class:`LocalPodExecutor`); ``cluster.image(task)`` registers a task's image so its
pods run that task. Backends made by
``k8s_backend(**options)`` are closed at the end of the test, which then checks that
nothing of the run is left in the namespace (pods, secrets, configmaps, policies).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.fakes.kubernetes.cluster import LocalCluster
from training.orchestrator.bwrap import bwrap_path
from training.orchestrator.kubernetes import KubernetesBackend

NAMESPACE = "openforge-test"
REGISTRY = "registry.test:5000"


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """Parametrize indirectly with a dict of ``FakeKubeAPI`` options (e.g. ``{"tls": True}``)."""
    if not bwrap_path():
        pytest.skip("bubblewrap not installed: the fake kubelet runs pods with it (apt-get install -y bubblewrap)")
    with LocalCluster(tmp_path, namespace=NAMESPACE, registry=REGISTRY, **getattr(request, "param", {})) as made:
        yield made


@pytest.fixture
async def k8s_backend(cluster: LocalCluster, tmp_path: Path) -> AsyncIterator[Callable[..., KubernetesBackend]]:
    made: list[KubernetesBackend] = []

    def make(**options: Any) -> KubernetesBackend:
        opts: dict[str, Any] = {"kubeconfig": str(cluster.kubeconfig), "namespace": NAMESPACE, "registry": REGISTRY,
                                "image_source": "content", "images": cluster.images, "resync_seconds": 2.0,
                                "delete_grace_seconds": 2, "image_pull_grace": 0.3, "unschedulable_grace": 0.3}
        opts.update(options)
        backend = KubernetesBackend(rollouts_dir=tmp_path / "rollouts", **opts)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()
    # nothing of any run may be left behind
    for _ in range(50):
        left = {k: v for k, v in cluster.objects().items() if v}
        if not left:
            break
        await asyncio.sleep(0.1)
    assert not left, f"leaked objects: {left}"
