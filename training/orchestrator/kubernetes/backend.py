"""The ``kubernetes`` sandbox backend: one Pod per rollout (see the package doc for the design).

``start`` resolves the task's image, builds the rollout's assignment (runner argv and env,
the task's visible files), and either claims an idle warm-pool pod or creates a Secret
(pod key, rollout token) and a Pod — at most ``max_pods`` at once, at most ``create_qps``
creations a second. One watch (with a periodic full resync) follows every pod of the run;
``wait`` returns when the pod's verdict is terminal, with the runner's report from the
proxy's finish record and the container log (fallback); ``cleanup`` deletes pod and Secret.
The run's owner ConfigMap, NetworkPolicy and any pods left by earlier runs of the same
``instance`` are handled in setup and ``aclose``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets as pysecrets
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from environments.deadline import hard_deadline
from environments.records import (
    RUNNER_REPORT_PREFIX,
    ErrorKind,
    Outcome,
    RolloutSpec,
    RunnerReport,
)
from environments.runner.finish import FINISH_KEY_ENV
from environments.taskdir import TaskDir, TaskDirError, load_task
from openforge.settings import get_settings
from training.orchestrator.backend import SandboxError, SandboxExit, SandboxHandle
from training.orchestrator.kubernetes.api import KubeApi, KubeError
from training.orchestrator.kubernetes.config import KubeSettings, load_settings
from training.orchestrator.kubernetes.control import (
    Assignment,
    ControlServer,
    PodSlot,
    tar_dir,
)
from training.orchestrator.kubernetes.images import (
    BuiltImages,
    ContentImages,
    ImageSource,
    PodImage,
)
from training.orchestrator.kubernetes.manifest import (
    ANNOTATION_TASK,
    CONTAINER,
    LABEL_IMAGE,
    LABEL_INSTANCE,
    LABEL_POOL,
    LABEL_ROLLOUT,
    LABEL_RUN,
    LABEL_TASK,
    MANAGED_BY,
    SECRET_FINISH_KEY,
    SECRET_POD_KEY,
    SECRET_TOKEN,
    EgressTarget,
    OwnerRef,
    PodPlan,
    base_labels,
    egress_targets,
    image_label,
    label_value,
    network_policy,
    owner_configmap,
    pod_name,
    pod_secret,
    rollout_pod,
    selector,
)
from training.orchestrator.kubernetes.outcome import PodTracker, PodVerdict, Thresholds
from training.orchestrator.kubernetes.ratelimit import TokenBucket
from training.orchestrator.kubernetes.warm import WarmPool
from training.orchestrator.kubernetes.watcher import PodWatcher
from training.orchestrator.layout import sized_for
from training.orchestrator.runtime import runner_command
from training.orchestrator.task_support import check_supported, task_env

log = logging.getLogger(__name__)

KINDS = ("Pod", "Secret", "NetworkPolicy", "ConfigMap")


class PodDeadlineExceeded(TimeoutError):
    """The pod hit activeDeadlineSeconds: the scheduler reports the rollout as ``timeout``."""


@dataclass(eq=False)
class PodState:
    """One pod this backend created and follows."""

    name: str
    key: str
    secret: str
    slot: PodSlot
    tracker: PodTracker
    created_at: float
    warm: bool
    verdict: asyncio.Future[PodVerdict] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    rollout_id: str | None = None
    last: dict[str, Any] | None = None
    running_at: float | None = None
    deleting: bool = False
    released: bool = False
    confirmed_at: float | None = None  # when the API accepted the pod (a list after this must show it)
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # the API no longer has it

    def finish(self, verdict: PodVerdict) -> None:
        if not self.verdict.done():
            self.verdict.set_result(verdict)


def _task_or_error(path: str) -> TaskDir:
    try:
        return load_task(path)
    except TaskDirError as exc:
        raise SandboxError(f"invalid task dir: {exc}", kind=ErrorKind.start_failed) from exc


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
        self.thresholds = Thresholds(pending_timeout=s.pending_timeout, unschedulable_grace=s.unschedulable_grace,
                                     image_pull_grace=s.image_pull_grace)
        self.api: KubeApi | None = None
        self.control = ControlServer(s.control_host, s.control_port, public_url=s.control_url,
                                     max_body=s.max_task_bytes)
        self.owner: OwnerRef | None = None
        self.watcher: PodWatcher | None = None
        self._setup_task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._pods: dict[str, PodState] = {}
        self._handles: dict[str, SandboxHandle] = {}
        self._started: set[str] = set()
        self._cap = asyncio.Semaphore(s.max_pods)
        self._bucket = TokenBucket(s.create_qps, s.create_burst)
        self._egress: set[EgressTarget] = set()
        self._egress_hosts: set[tuple[str, int]] = set()
        self._allow_dns = False
        self._policy_lock = asyncio.Lock()
        self._pools: dict[tuple[Any, ...], WarmPool] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.stats: dict[str, int] = {"pods_created": 0, "pods_deleted": 0, "orphans_removed": 0, "warm_claims": 0,
                                      "warm_waits": 0, "cold_starts": 0}
        self.policy_name = f"openforge-run-{label_value(self.run_id)}"[:63]

    # -- setup -----------------------------------------------------------------------------
    async def _ensure_setup(self) -> None:
        if self._setup_task is None:
            self._setup_task = asyncio.create_task(self._setup())
        await asyncio.shield(self._setup_task)

    async def _setup(self) -> None:
        s = self.settings
        try:
            self.api = await KubeApi.connect(s.namespace, kubeconfig=s.kubeconfig, context=s.context,
                                             in_cluster=s.in_cluster, pool_size=min(1024, s.max_pods + 64))
        except KubeError as exc:
            raise SandboxError(f"kubernetes backend: {exc}") from exc
        try:
            await self.remove_orphans()
            owner = await self.api.create(owner_configmap(self.policy_name, s.namespace, self.labels,
                                                          {"run": self.run_id, "instance": s.instance}))
        except KubeError as exc:
            hint = {404: f"does namespace {s.namespace!r} exist? (configs/k8s/)",
                    403: "the orchestrator's service account lacks RBAC in that namespace (configs/k8s/)"}
            raise SandboxError(f"kubernetes backend setup: {exc}" + (f" — {hint[exc.status]}" if exc.status in hint
                                                                      else "")) from exc
        self.owner = OwnerRef(owner["metadata"]["name"], owner["metadata"].get("uid", ""))
        await self.control.start()
        host, port = self._host_port(self.control.url)
        await self._add_egress(host, port, create=True)
        self.watcher = PodWatcher(self.api, selector(self.labels), self._on_event, resync=s.resync_seconds,
                                  expected=self._expected)
        self.watcher.start()
        await asyncio.wait_for(self.watcher.synced.wait(), 60)
        self._ticker = asyncio.create_task(self._tick(), name="openforge-k8s-tick")

    @staticmethod
    def _host_port(url: str) -> tuple[str, int]:
        parts = urlsplit(url)
        if not parts.hostname:
            raise SandboxError(f"URL {url!r} has no host")
        return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)

    async def remove_orphans(self) -> int:
        """Delete objects of this ``instance`` left by earlier runs (labels name the run)."""
        assert self.api is not None
        mine = {MANAGED_BY: "openforge", LABEL_INSTANCE: self.labels[LABEL_INSTANCE]}
        removed = 0
        for kind in KINDS:
            items, _ = await self.api.list(kind, selector(mine))
            stale = [i["metadata"]["name"] for i in items
                     if (i["metadata"].get("labels") or {}).get(LABEL_RUN) != self.labels[LABEL_RUN]]
            for chunk in range(0, len(stale), 64):
                done = await asyncio.gather(*(self.api.delete(kind, n, grace_seconds=0 if kind == "Pod" else None)
                                              for n in stale[chunk:chunk + 64]), return_exceptions=True)
                removed += sum(1 for d in done if d is True and kind == "Pod")
            if stale:
                log.info("removed %d orphan %s object(s) of earlier runs", len(stale), kind)
        self.stats["orphans_removed"] += removed
        return removed

    async def _add_egress(self, host: str, port: int, *, create: bool = False) -> None:
        if (host, port) in self._egress_hosts and not create:
            return
        async with self._policy_lock:
            if (host, port) in self._egress_hosts and not create:
                return
            try:
                infos = await asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
                resolved = sorted({i[4][0] for i in infos})
            except OSError as exc:
                raise SandboxError(f"cannot resolve {host!r} for the NetworkPolicy: {exc}",
                                   kind=ErrorKind.start_failed) from exc
            targets = egress_targets(host, port, resolved)
            self._egress.update(targets)
            self._allow_dns = self._allow_dns or not _is_ip(host)
            self._egress_hosts.add((host, port))
            body = network_policy(self.policy_name, self.settings.namespace, self.labels, dict(self.labels),
                                  sorted(self._egress, key=lambda t: (t.cidr, t.port)), allow_dns=self._allow_dns,
                                  owner=self.owner, extra_rules=self.settings.egress_rules)
            assert self.api is not None
            if create:
                await self.api.create(body)
            else:
                await self.api.replace_network_policy(body)

    # -- watch -----------------------------------------------------------------------------
    def _expected(self, before: float) -> list[str]:
        return [s.name for s in self._pods.values() if s.confirmed_at is not None and s.confirmed_at < before]

    def _on_event(self, kind: str, pod: dict[str, Any]) -> None:
        state = self._pods.get((pod.get("metadata") or {}).get("name", ""))
        if state is None:
            return
        if kind in ("DELETED", "GONE"):
            state.gone.set()
            if not state.deleting:
                state.finish(PodVerdict(terminal=True, error_kind=ErrorKind.evicted,
                                        message=f"pod {state.name}: deleted by someone else "
                                                "(node lost, preemption or a user)"))
            return
        state.last = pod
        self._judge(state, time.monotonic())

    def _judge(self, state: PodState, now: float) -> None:
        if state.verdict.done() or state.last is None:
            return
        verdict = state.tracker.observe(state.last, now)
        if verdict.running and state.running_at is None:
            state.running_at = now
        if verdict.terminal:
            state.finish(verdict)

    async def _tick(self) -> None:
        """Re-judge waiting pods once a second (grace periods and pending timeouts expire
        without any new event)."""
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for state in list(self._pods.values()):
                if state.verdict.done() or state.running_at is not None:
                    continue
                if state.last is None:
                    state.last = {"metadata": {"name": state.name}, "status": {"phase": "Pending"}}
                self._judge(state, now)

    # -- pods ------------------------------------------------------------------------------
    async def _create_pod(self, image: PodImage, task: TaskDir, spec: RolloutSpec | None) -> PodState:
        """Secret + Pod for a rollout (``spec``) or for a warm pool (``spec=None``); holds a cap slot."""
        s = self.settings
        assert self.api is not None
        await self._cap.acquire()
        ident = spec.rollout_id if spec is not None else uuid.uuid4().hex
        name = pod_name("r" if spec is not None else "w", ident)
        key = pysecrets.token_urlsafe(24)
        labels = {**self.labels, LABEL_POOL: "cold" if spec is not None else "warm", LABEL_IMAGE: image_label(image.ref)}
        values = {SECRET_POD_KEY: key}
        annotations: dict[str, str] = {}
        if spec is not None:
            labels[LABEL_ROLLOUT] = label_value(spec.rollout_id)
            if spec.task_id:
                labels[LABEL_TASK] = label_value(spec.task_id)
                annotations[ANNOTATION_TASK] = spec.task_id
            if spec.token:
                values[SECRET_TOKEN] = spec.token
            if spec.finish_key:
                values[SECRET_FINISH_KEY] = spec.finish_key
        state = PodState(name=name, key=key, secret=name, slot=self.control.register(key, name),
                         tracker=PodTracker(created_at=time.monotonic(), thresholds=self.thresholds),
                         created_at=time.monotonic(), warm=spec is None)
        self._pods[name] = state
        cfg = task.config.environment
        plan = PodPlan(name=name, image=image.ref, workdir=image.workdir, labels=labels, secret_name=name,
                       control_url=self.control.url, cpus=cfg.cpus, memory_mb=cfg.memory_mb,
                       storage_mb=cfg.storage_mb, gpus=cfg.gpus, deadline_seconds=hard_deadline(spec.timeout_sec) if spec is not None else None,
                       annotations=annotations)
        try:
            await self._bucket.take()
            await self.api.create(pod_secret(name, s.namespace, labels, self.owner, values))
            body = rollout_pod(plan, namespace=s.namespace, owner=self.owner, runtime_image=s.runtime_image,
                               runtime_dir=s.runtime_dir, runtime_python=s.runtime_python, run_as_user=s.run_as_user,
                               image_pull_policy=s.image_pull_policy, image_pull_secrets=s.image_pull_secrets,
                               service_account=s.service_account, node_selector=s.node_selector,
                               tolerations=s.tolerations, grace_seconds=s.delete_grace_seconds)
            state.created_at = state.tracker.created_at = time.monotonic()
            await self.api.create(body)
            state.confirmed_at = time.monotonic()
            self.stats["pods_created"] += 1
        except BaseException as exc:
            await asyncio.shield(self._release(state))
            if isinstance(exc, KubeError):
                kind = ErrorKind.start_failed
                raise SandboxError(f"pod {name} not created: {exc}", kind=kind) from exc
            raise
        return state

    async def _release(self, state: PodState, *, grace: int | None = None) -> None:
        """Delete the pod and its Secret, forget its slot, free its cap slot (idempotent)."""
        if state.released:
            return
        state.released = True
        state.deleting = True
        try:
            if self.api is not None:
                g = self.settings.delete_grace_seconds if grace is None else grace
                results = await asyncio.gather(self.api.delete("Pod", state.name, grace_seconds=g),
                                               self.api.delete("Secret", state.secret), return_exceptions=True)
                for r in results:
                    if isinstance(r, BaseException):
                        log.warning("cleanup of %s: %s", state.name, r)
                if results[0] is True:
                    self.stats["pods_deleted"] += 1
                    # The pod counts against max_pods (and is live) until the API has let it go.
                    try:
                        await asyncio.wait_for(state.gone.wait(), g + self.settings.resync_seconds + 5)
                    except TimeoutError:
                        log.warning("pod %s still present %ss after its deletion", state.name, g + 5)
        finally:
            self.control.unregister(state.key)
            self._pods.pop(state.name, None)
            state.finish(PodVerdict(terminal=True, message="released"))
            self._cap.release()

    def _pool(self, image: PodImage, task: TaskDir) -> WarmPool:
        cfg = task.config.environment
        key = (image.ref, image.workdir, cfg.cpus, cfg.memory_mb, cfg.storage_mb, cfg.gpus)
        pool = self._pools.get(key)
        if pool is None:
            pool = WarmPool(key, self.settings.warm_pool, lambda: self._create_pod(image, task, None), self._release)
            self._pools[key] = pool
        return pool

    async def prewarm(self, task_dirs: list[str], *, timeout: float = 120.0) -> bool:
        """Start the warm pools of these tasks' images and wait until they are full."""
        await self._ensure_setup()
        pools = []
        for path in task_dirs:
            task = await asyncio.to_thread(_task_or_error, path)
            pools.append(self._pool(await self.images.resolve(task), task))
        results = await asyncio.gather(*(p.wait_ready(timeout) for p in pools))
        return all(results)

    # -- protocol --------------------------------------------------------------------------
    async def start(self, spec: RolloutSpec) -> SandboxHandle:
        t0 = time.monotonic()
        await self._ensure_setup()
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
                assignment = await asyncio.to_thread(self._assignment, spec, task, image)
            assert assignment is not None
            handle.state["image"] = image.ref
            if spec.base_url:
                await self._add_egress(*self._host_port(spec.base_url))
            state, waited = (await self._pool(image, task).claim()) if self.settings.warm_pool > 0 else (None, False)
            if state is not None:
                handle.timings["warm"] = 1.0
                self.stats["warm_waits" if waited else "warm_claims"] += 1
            else:
                state = await self._create_pod(image, task, spec)
                self.stats["cold_starts"] += 1
            state.rollout_id = spec.rollout_id
            handle.state["pod"] = state
            tests_dir = task.path / "tests"
            state.slot.assign(assignment, logs_dir=logs, tests=lambda: asyncio.to_thread(
                lambda: tar_dir(tests_dir, max_bytes=self.settings.max_task_bytes) if tests_dir.is_dir() else b""))
            if state.warm:
                self._spawn(self._label_claimed(state, spec))
        except BaseException:
            await asyncio.shield(self.cleanup(handle))
            raise
        handle.timings["start_latency"] = time.monotonic() - t0
        return handle

    def _prepare(self, spec: RolloutSpec, logs: Path) -> tuple[TaskDir, PodImage | None, Assignment | None]:
        """Blocking part of ``start`` in one thread hop: logs dir, task, image tag (content
        images), assignment."""
        (logs / "agent").mkdir(parents=True, exist_ok=True)
        task = sized_for(_task_or_error(spec.task_dir), spec)
        check_supported(task, self.name)
        if not isinstance(self.images, ContentImages):
            return task, None, None
        image = self.images.resolve_now(task.path)
        return task, image, self._assignment(spec, task, image)

    def _assignment(self, spec: RolloutSpec, task: TaskDir, image: PodImage) -> Assignment:
        oracle = spec.harness == "oracle"
        try:
            task_tar = tar_dir(task.path, skip_top=("tests", "solution"), max_bytes=self.settings.max_task_bytes)
            solution = task.path / "solution"
            solution_tar = tar_dir(solution, max_bytes=self.settings.max_task_bytes) if oracle and solution.is_dir() else None
        except (OSError, ValueError) as exc:
            raise SandboxError(f"task files of {task.path}: {exc}", kind=ErrorKind.start_failed) from exc
        argv = runner_command(spec, python="python3", task_dir="/task", workspace=image.workdir, logs_dir="/logs",
                              tests_dir="/tests", solution_dir="/solution" if oracle else None,
                              agent_timeout=None, verifier_timeout=None, agent_jail="auto")
        env = dict(spec.env)
        env.update(task_env(task))  # over the control channel, never in the pod spec
        env.update({"OPENFORGE_SANDBOX_ID": spec.rollout_id, "OPENFORGE_MODEL": spec.model})
        if spec.base_url:
            env["OPENFORGE_BASE_URL"] = spec.base_url
        if spec.token:
            env["OPENFORGE_ROLLOUT_TOKEN"] = spec.token
        if spec.finish_key:
            env[FINISH_KEY_ENV] = spec.finish_key
        return Assignment(rollout_id=spec.rollout_id, argv=argv, env=env, workdir=image.workdir, task_tar=task_tar,
                          solution_tar=solution_tar)

    async def _label_claimed(self, state: PodState, spec: RolloutSpec) -> None:
        """Label a claimed warm pod with its rollout and give it the rollout's deadline."""
        assert self.api is not None
        labels = {LABEL_ROLLOUT: label_value(spec.rollout_id), LABEL_POOL: "claimed"}
        if spec.task_id:
            labels[LABEL_TASK] = label_value(spec.task_id)
        age = time.monotonic() - state.created_at
        patch = {"metadata": {"labels": labels}, "spec": {"activeDeadlineSeconds": int(age + hard_deadline(spec.timeout_sec)) + 1}}
        try:
            await self.api.patch_pod(state.name, patch)
        except KubeError as exc:
            log.warning("claimed warm pod %s: could not label it: %s", state.name, exc)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def wait(self, handle: SandboxHandle) -> SandboxExit:
        state: PodState = handle.state["pod"]
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
        report, report_error = await self._log_report(handle, state)
        proxy_report = await self._proxy_report(handle.rollout_id)
        if proxy_report is not None:
            if report is None:
                report = proxy_report
            elif proxy_report.status != report.status:  # e.g. the proxy's sticky engine_error
                report.status, report.error_kind, report.error = (proxy_report.status, proxy_report.error_kind,
                                                                  proxy_report.error)
        cancelled = bool(handle.state.get("cancelled"))
        if report is not None:
            return SandboxExit(exit_code=verdict.exit_code, report=report, oom=verdict.oom, cancelled=cancelled,
                               timings=timings)
        if verdict.timeout:
            raise PodDeadlineExceeded(verdict.message)
        if verdict.error_kind is not None and verdict.error_kind != ErrorKind.oom and not cancelled:
            raise SandboxError(await self._with_events(verdict.message, state), kind=verdict.error_kind)
        return SandboxExit(exit_code=verdict.exit_code, oom=verdict.oom, cancelled=cancelled,
                           error=verdict.message if verdict.oom else report_error, timings=timings)

    async def _with_events(self, message: str, state: PodState) -> str:
        """``message`` plus the pod's latest Warning events, the scheduler's and kubelet's own
        account of a failure (best effort: without RBAC on events the message stays as is)."""
        assert self.api is not None
        try:
            async with asyncio.timeout(10):
                events = await self.api.warning_events(state.name)
        except (KubeError, TimeoutError) as exc:
            log.debug("events of %s: %s", state.name, exc)
            return message
        news = [str(e) for e in events if e.message not in message]  # not what the message says already
        return message + (f" | events: {'; '.join(news)}" if news else "")

    async def _log_report(self, handle: SandboxHandle, state: PodState) -> tuple[RunnerReport | None, str | None]:
        """The container log into ``runner.log``; the runner's report line from it (fallback)."""
        assert self.api is not None
        try:
            text = await self.api.pod_logs(state.name, CONTAINER)
        except KubeError as exc:
            log.debug("logs of %s: %s", state.name, exc)
            return None, None
        return await asyncio.to_thread(_keep_log, Path(handle.root) / "runner.log", text)

    async def _proxy_report(self, rollout_id: str) -> RunnerReport | None:
        """The runner's finish record on the proxy (when a proxy client was given)."""
        if self.proxy is None:
            return None
        try:
            row = await self.proxy.get(rollout_id)
        except Exception as exc:  # noqa: BLE001 - the proxy is optional here
            log.debug("proxy record of %s: %s", rollout_id, exc)
            return None
        if not row.get("finished_at") or "reported_status" not in (row.get("metadata") or {}):
            return None
        try:
            return RunnerReport(status=Outcome(row["status"]), reward=row.get("reward"), error_kind=row.get("error_kind"),
                                error=row.get("error"), timings=row.get("timings") or {})
        except ValueError:
            return None

    async def cancel(self, handle: SandboxHandle) -> None:
        handle.state["cancelled"] = True
        state: PodState | None = handle.state.get("pod")
        if state is not None and self.api is not None:
            state.deleting = True
            try:
                await self.api.delete("Pod", state.name, grace_seconds=self.settings.delete_grace_seconds)
            except KubeError as exc:
                log.debug("cancel %s: %s", state.name, exc)

    async def logs(self, handle: SandboxHandle) -> str:
        path = Path(handle.root) / "runner.log"
        return await asyncio.to_thread(lambda: path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")

    async def cleanup(self, handle: SandboxHandle) -> None:
        state: PodState | None = handle.state.pop("pod", None)
        if state is not None:
            await self._release(state)
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
        await asyncio.gather(*(self._release(s, grace=0) for s in list(self._pods.values())), return_exceptions=True)
        for task in (self._ticker,):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
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


def _keep_log(path: Path, text: str) -> tuple[RunnerReport | None, str | None]:
    """Append ``text`` to ``path``; the last ``OPENFORGE_RESULT`` line parsed (or why not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") or not text else text + "\n")
    marker = RUNNER_REPORT_PREFIX.strip()
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith(marker):
            try:
                return RunnerReport.model_validate_json(line[len(marker):].strip()), None
            except ValidationError as exc:
                return None, f"unparsable {marker} line: {exc.errors()[:1]}"
    return None, None


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False
