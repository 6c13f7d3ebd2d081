"""A fake cluster whose kubelet runs pods through bubblewrap, and kubernetes backends on it.

``cluster`` is the fake API server (tests/fakes/k8s) with the :class:`LocalPodExecutor`;
``cluster.image(task)`` registers a task's image so its pods run that task. Backends made by
``k8s_backend(**options)`` are closed at the end of the test, which then checks that
nothing of the run is left in the namespace (pods, secrets, configmaps, policies).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from environments.taskdir import load_task
from training.orchestrator.bwrap import bwrap_path
from training.orchestrator.kubernetes import KubernetesBackend
from training.orchestrator.kubernetes.images import ContentImages

NAMESPACE = "openforge-test"
REGISTRY = "registry.test:5000"


class Cluster:
    def __init__(self, api: Any, executor: Any, kubeconfig: Path) -> None:
        self.api, self.executor, self.kubeconfig = api, executor, kubeconfig
        self.images = ContentImages(REGISTRY)

    async def image(self, task: Path) -> str:
        ref = (await self.images.resolve(load_task(task))).ref
        self.executor.images[ref] = Path(task)
        return ref

    def objects(self) -> dict[str, list[str]]:
        from tests.fakes.k8s.resources import BY_KIND

        def collect(store: Any, _k: Any) -> dict[str, list[str]]:
            return {kind: sorted(o["metadata"]["name"] for o in store.iter(BY_KIND[kind], NAMESPACE))
                    for kind in ("Pod", "Secret", "ConfigMap", "NetworkPolicy")}
        return self.api.call(collect)


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """Parametrize indirectly with a dict of ``FakeKubeAPI`` options (e.g. ``{"tls": True}``)."""
    if not bwrap_path():
        pytest.skip("bubblewrap not installed: the fake kubelet runs pods with it (apt-get install -y bubblewrap)")
    from tests.fakes.k8s import FakeKubeAPI, SimulatedKubelet
    from tests.fakes.k8s.kubelet import SECRETS
    from tests.fakes.k8s.local_executor import LocalPodExecutor
    from tests.fakes.k8s.store import NAMESPACES

    holder: dict[str, Any] = {}
    work = tmp_path / "node"
    work.mkdir()
    from tests.fakes.k8s.resources import BY_KIND

    executor = LocalPodExecutor({}, secrets=lambda ns, name: holder["api"].store.peek(SECRETS, ns, name),
                                policies=lambda ns: list(holder["api"].store.iter(BY_KIND["NetworkPolicy"], ns)),
                                work_root=work)
    api = FakeKubeAPI(kubelet=SimulatedKubelet(executor=executor), **getattr(request, "param", {})).start()
    holder["api"] = api
    try:
        api.call(lambda s, _k: s.create(NAMESPACES, "", {"metadata": {"name": NAMESPACE}}))
        yield Cluster(api, executor, api.write_kubeconfig(tmp_path / "kubeconfig"))
    finally:
        api.stop()


@pytest.fixture
async def k8s_backend(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Callable[..., KubernetesBackend]]:
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
