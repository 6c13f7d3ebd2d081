"""A fake cluster that runs real rollout pods on this host: the fake API server whose
simulated kubelet runs every pod through bubblewrap (:class:`LocalPodExecutor`, which
enforces the run's NetworkPolicy and limits as a node would), one namespace, and
content-addressed images (``await cluster.image(task)`` makes a task's pods run that task).

    with LocalCluster(tmp_path, namespace="openforge-test", registry="registry.test:5000") as cluster:
        backend = KubernetesBackend(kubeconfig=str(cluster.kubeconfig), images=cluster.images, ...)
        await cluster.image(task_dir)
        cluster.objects()            # names of the namespace's pods, secrets, configmaps, policies

Used by the kubernetes backend tests and ``bench/redteam.py``. Needs bubblewrap
(``training.orchestrator.bwrap.bwrap_path``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from environments.taskdir import load_task
from testkit.fakes.kubernetes.kubelet import SECRETS, SimulatedKubelet
from testkit.fakes.kubernetes.local_executor import LocalPodExecutor
from testkit.fakes.kubernetes.resources import BY_KIND
from testkit.fakes.kubernetes.server import FakeKubeAPI
from testkit.fakes.kubernetes.store import NAMESPACES
from training.orchestrator.kubernetes.images import ContentImages

#: The kinds :meth:`LocalCluster.objects` lists (what a run may leave behind).
RUN_KINDS = ("Pod", "Secret", "ConfigMap", "NetworkPolicy")


class LocalCluster:
    """The fake API server (started) with a bubblewrap kubelet; ``work`` holds the node's
    pod dirs and the kubeconfig; ``api_options`` go to :class:`FakeKubeAPI` (e.g. ``tls``)."""

    def __init__(self, work: Path, *, namespace: str, registry: str, **api_options: Any) -> None:
        self.namespace = namespace
        node = work / "node"
        node.mkdir(parents=True, exist_ok=True)
        self.executor = LocalPodExecutor(
            {}, secrets=lambda ns, name: self.api.store.peek(SECRETS, ns, name),
            policies=lambda ns: list(self.api.store.iter(BY_KIND["NetworkPolicy"], ns)), work_root=node)
        self.api = FakeKubeAPI(kubelet=SimulatedKubelet(executor=self.executor), **api_options).start()
        try:
            self.api.call(lambda s, _k: s.create(NAMESPACES, "", {"metadata": {"name": namespace}}))
            self.kubeconfig = self.api.write_kubeconfig(work / "kubeconfig")
        except BaseException:
            self.api.stop()
            raise
        self.images = ContentImages(registry)

    async def image(self, task: Path) -> str:
        """Register ``task``'s content image (its ref) so that pods of that image run the task."""
        ref = (await self.images.resolve(load_task(task))).ref
        self.executor.images[ref] = Path(task)
        return ref

    def objects(self) -> dict[str, list[str]]:
        """Names of the namespace's objects of each of :data:`RUN_KINDS`."""

        def collect(store: Any, _k: Any) -> dict[str, list[str]]:
            return {kind: sorted(o["metadata"]["name"] for o in store.iter(BY_KIND[kind], self.namespace))
                    for kind in RUN_KINDS}
        return self.api.call(collect)

    def stop(self) -> None:
        self.api.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
