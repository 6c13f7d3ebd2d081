"""The ``kubernetes`` sandbox backend: one Pod per rollout (see the package doc for the design).

``start`` resolves the task's image, builds the rollout's assignment (:mod:`.assignment`),
and either claims an idle warm-pool pod (:mod:`.warm`) or creates a Secret and a Pod
(:mod:`.pods`: at most ``max_pods`` at once, at most ``create_qps`` creations a second). One
watch (with a periodic full resync, :mod:`.watcher`) follows every pod of the run; ``wait``
returns when the pod's verdict is terminal, with the runner's report (:mod:`.reports`);
``cleanup`` deletes pod and Secret. The run's owner ConfigMap, NetworkPolicy (:mod:`.egress`)
and any objects left by earlier runs of the same ``instance`` (:mod:`.orphans`) are handled
in setup and ``aclose``. This module composes those pieces; it owns the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from environments.records import ErrorKind, RolloutSpec
from environments.taskdir import TaskDir
from openforge.aio import outlast
from openforge.settings import get_settings
from training.orchestrator.backend import SandboxError, SandboxExit, SandboxHandle
from training.orchestrator.kubernetes.api import KubeApi, KubeError
from training.orchestrator.kubernetes.assignment import assignment_for, task_or_error
from training.orchestrator.kubernetes.config import KubeSettings, load_settings
from training.orchestrator.kubernetes.control import Assignment, ControlServer, tar_dir
from training.orchestrator.kubernetes.egress import EgressPolicy, host_port
from training.orchestrator.kubernetes.images import (
    BuiltImages,
    ContentImages,
    ImageSource,
    PodImage,
)
from training.orchestrator.kubernetes.manifest import (
    LABEL_ROLLOUT,
    OwnerRef,
    base_labels,
    label_value,
    owner_configmap,
    selector,
)
from training.orchestrator.kubernetes.orphans import remove_orphans
from training.orchestrator.kubernetes.pods import PodFleet, PodState
from training.orchestrator.kubernetes.reports import (
    log_report,
    merged,
    proxy_report,
    with_events,
)
from training.orchestrator.kubernetes.warm import WarmPool
from training.orchestrator.kubernetes.watcher import PodWatcher
from training.orchestrator.layout import sized_for
from training.orchestrator.task_support import check_supported

log = logging.getLogger(__name__)


class PodDeadlineExceeded(TimeoutError):
    """The pod hit activeDeadlineSeconds: the scheduler reports the rollout as ``timeout``."""


class KubernetesBackend:
    """Sandboxes as Kubernetes pods. Options: the fields of :class:`KubeSettings`, plus
    ``proxy`` (a ``ProxyAdminClient``: the runner's finish record is read from it) and
    ``images`` (an :class:`ImageSource`)."""

    name = "kubernetes"

    def __init__(self, *, rollouts_dir: Path | None = None, proxy: Any | None = None,
                 images: ImageSource | None = None, **options: Any) -> None:
        try:
            self.settings: KubeSettings = load_settings(**options)
        except ValueError as exc:
            raise SandboxError(str(exc)) from exc
        s = self.settings
        self.run_id = s.run_id or uuid.uuid4().hex[:12]
        self.rollouts_dir = rollouts_dir or get_settings().rollouts_dir
        self.proxy = proxy
        self.images: ImageSource = images or (ContentImages(s.registry) if s.image_source == "content"
                                              else BuiltImages(s.registry))
        self.labels = base_labels(s.instance, self.run_id)
        self.api: KubeApi | None = None
        self.control = ControlServer(s.control_host, s.control_port, public_url=s.control_url,
                                     max_body=s.max_task_bytes)
        self.owner: OwnerRef | None = None
        self.watcher: PodWatcher | None = None
        self.fleet: PodFleet | None = None  # the run's pods, once set up
        self.egress: EgressPolicy | None = None
        self._setup_task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._handles: dict[str, SandboxHandle] = {}
        self._started: set[str] = set()
        self._pools: dict[tuple[Any, ...], WarmPool] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.stats: dict[str, int] = {"pods_created": 0, "pods_deleted": 0, "orphans_removed": 0, "warm_claims": 0,
                                      "warm_waits": 0, "cold_starts": 0}
        self.policy_name = f"openforge-run-{label_value(self.run_id)}"[:63]

    # -- setup -----------------------------------------------------------------------------
    async def _ensure_setup(self) -> tuple[KubeApi, PodFleet, EgressPolicy]:
        if self._setup_task is None:
            self._setup_task = asyncio.create_task(self._setup())
        await asyncio.shield(self._setup_task)
        assert self.api is not None and self.fleet is not None and self.egress is not None
        return self.api, self.fleet, self.egress

    async def _setup(self) -> None:
        s = self.settings
        try:
            self.api = api = await KubeApi.connect(s.namespace, kubeconfig=s.kubeconfig, context=s.context,
                                                   in_cluster=s.in_cluster, pool_size=min(1024, s.max_pods + 64))
        except KubeError as exc:
            raise SandboxError(f"kubernetes backend: {exc}") from exc
        try:
            self.stats["orphans_removed"] += await remove_orphans(api, self.labels)
            owner = await api.create(owner_configmap(self.policy_name, s.namespace, self.labels,
                                                     {"run": self.run_id, "instance": s.instance}))
        except KubeError as exc:
            hint = {404: f"does namespace {s.namespace!r} exist? (configs/k8s/)",
                    403: "the orchestrator's service account lacks RBAC in that namespace (configs/k8s/)"}
            raise SandboxError(f"kubernetes backend setup: {exc}" + (f" — {hint[exc.status]}" if exc.status in hint
                                                                      else "")) from exc
        self.owner = OwnerRef(owner["metadata"]["name"], owner["metadata"].get("uid", ""))
        self.fleet = fleet = PodFleet(api, s, self.control, self.labels, self.owner, self.stats)
        await self.control.start()
        self.egress = EgressPolicy(api, self.policy_name, s.namespace, self.labels, owner=self.owner,
                                   extra_rules=s.egress_rules)
        await self.egress.allow(*host_port(self.control.url), create=True)
        self.watcher = PodWatcher(api, selector(self.labels), fleet.on_event, resync=s.resync_seconds,
                                  expected=fleet.expected)
        self.watcher.start()
        await asyncio.wait_for(self.watcher.synced.wait(), 60)
        self._ticker = asyncio.create_task(fleet.tick(), name="openforge-k8s-tick")

    # -- warm pools ------------------------------------------------------------------------
    def _pool(self, fleet: PodFleet, image: PodImage, task: TaskDir) -> WarmPool:
        cfg = task.config.environment
        key = (image.ref, image.workdir, cfg.cpus, cfg.memory_mb, cfg.storage_mb, cfg.gpus)
        pool = self._pools.get(key)
        if pool is None:
            pool = WarmPool(key, self.settings.warm_pool, lambda: fleet.create(image, task, None), fleet.release)
            self._pools[key] = pool
        return pool

    async def prewarm(self, task_dirs: list[str], *, timeout: float = 120.0) -> bool:
        """Start the warm pools of these tasks' images and wait until they are full."""
        _, fleet, _ = await self._ensure_setup()
        pools = []
        for path in task_dirs:
            task = await asyncio.to_thread(task_or_error, path)
            pools.append(self._pool(fleet, await self.images.resolve(task), task))
        results = await asyncio.gather(*(p.wait_ready(timeout) for p in pools))
        return all(results)

    # -- protocol --------------------------------------------------------------------------
    async def start(self, spec: RolloutSpec) -> SandboxHandle:
        t0 = time.monotonic()
        _, fleet, egress = await self._ensure_setup()
        self._started.add(spec.rollout_id)
        base = self.rollouts_dir / spec.rollout_id
        logs = base / "logs"
        handle = SandboxHandle(rollout_id=spec.rollout_id, backend=self.name, isolation="pod", root=str(base),
                               logs_dir=str(logs))
        handle.state["requested_at"] = t0
        self._handles[spec.rollout_id] = handle
        try:
            task, image, assignment = await asyncio.to_thread(self._prepare, spec, logs)
            if image is None:  # an image source that builds or looks up asynchronously
                image = await self.images.resolve(task)
                assignment = await asyncio.to_thread(assignment_for, spec, task, image,
                                                     max_bytes=self.settings.max_task_bytes)
            assert assignment is not None
            handle.state["image"] = image.ref
            if spec.base_url:
                await egress.allow(*host_port(spec.base_url))
            state, waited = (await self._pool(fleet, image, task).claim()) if self.settings.warm_pool > 0 else (None, False)
            if state is not None:
                handle.timings["warm"] = 1.0
                self.stats["warm_waits" if waited else "warm_claims"] += 1
            else:
                state = await fleet.create(image, task, spec)
                self.stats["cold_starts"] += 1
            state.rollout_id = spec.rollout_id
            handle.state["pod"] = state
            tests_dir = task.path / "tests"
            state.slot.assign(assignment, logs_dir=logs, tests=lambda: asyncio.to_thread(
                lambda: tar_dir(tests_dir, max_bytes=self.settings.max_task_bytes) if tests_dir.is_dir() else b""))
            if state.warm:
                self._spawn(fleet.label_claimed(state, spec))
        except BaseException:
            await outlast(self.cleanup(handle))
            raise
        handle.timings["start_latency"] = time.monotonic() - t0
        return handle

    def _prepare(self, spec: RolloutSpec, logs: Path) -> tuple[TaskDir, PodImage | None, Assignment | None]:
        """Blocking part of ``start`` in one thread hop: logs dir, task, image tag (content
        images), assignment."""
        (logs / "agent").mkdir(parents=True, exist_ok=True)
        task = sized_for(task_or_error(spec.task_dir), spec)
        check_supported(task, self.name)
        if not isinstance(self.images, ContentImages):
            return task, None, None
        image = self.images.resolve_now(task.path)
        return task, image, assignment_for(spec, task, image, max_bytes=self.settings.max_task_bytes)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def wait(self, handle: SandboxHandle) -> SandboxExit:
        state: PodState = handle.state["pod"]
        api = self.api
        assert api is not None
        t0 = time.monotonic()
        verdict = await asyncio.shield(state.verdict)
        requested = handle.state["requested_at"]
        timings = {"run": time.monotonic() - t0}
        if state.slot.fetched_at is not None:
            timings["requested_to_running"] = max(0.0, state.slot.fetched_at - requested)
        if state.running_at is not None:
            timings["pod_running"] = max(0.0, state.running_at - requested)
        if state.slot.agent_done_at is not None:
            timings["agent"] = state.slot.agent_done_at - t0
        report, report_error = await log_report(api, state.name, Path(handle.root))
        report = merged(report, await proxy_report(self.proxy, handle.rollout_id))
        cancelled = bool(handle.state.get("cancelled"))
        if report is not None:
            return SandboxExit(exit_code=verdict.exit_code, report=report, oom=verdict.oom, cancelled=cancelled,
                               timings=timings)
        if verdict.timeout:
            raise PodDeadlineExceeded(verdict.message)
        if verdict.error_kind is not None and verdict.error_kind != ErrorKind.oom and not cancelled:
            raise SandboxError(await with_events(api, verdict.message, state.name), kind=verdict.error_kind)
        return SandboxExit(exit_code=verdict.exit_code, oom=verdict.oom, cancelled=cancelled,
                           error=verdict.message if verdict.oom else report_error, timings=timings)

    async def cancel(self, handle: SandboxHandle) -> None:
        handle.state["cancelled"] = True
        state: PodState | None = handle.state.get("pod")
        if state is not None and self.fleet is not None and self.api is not None:
            await self.fleet.delete_now(state)

    async def logs(self, handle: SandboxHandle) -> str:
        path = Path(handle.root) / "runner.log"
        return await asyncio.to_thread(lambda: path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")

    async def cleanup(self, handle: SandboxHandle) -> None:
        state: PodState | None = handle.state.pop("pod", None)
        if state is not None and self.fleet is not None:
            await self.fleet.release(state)
        self._handles.pop(handle.rollout_id, None)

    async def live_sandboxes(self) -> list[str]:
        """Rollouts of this backend whose pods still exist in the cluster."""
        if self.api is None:
            return []
        items, _ = await self.api.list("Pod", selector(self.labels))
        live = {(i["metadata"].get("labels") or {}).get(LABEL_ROLLOUT) for i in items}
        return sorted(r for r in live if r and r in self._started)

    async def aclose(self) -> None:
        for pool in list(self._pools.values()):
            await pool.aclose()
        await asyncio.gather(*(self.cleanup(h) for h in list(self._handles.values())), return_exceptions=True)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.fleet is not None:
            await asyncio.gather(*(self.fleet.release(s, grace=0) for s in list(self.fleet.pods.values())),
                                 return_exceptions=True)
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        if self.watcher is not None:
            await self.watcher.aclose()
        if self.api is not None:
            for kind, name in (("NetworkPolicy", self.policy_name), ("ConfigMap", self.policy_name)):
                try:
                    await self.api.delete(kind, name)
                except KubeError as exc:
                    log.warning("delete %s %s: %s", kind, name, exc)
            await self.api.close()
            self.api = None
        await self.control.aclose()
