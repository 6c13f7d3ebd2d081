"""The simulated scheduler + kubelet of the fake cluster: binds pods to nodes with capacity,
pulls images, runs each pod through an executor and drives the pod's real status fields.

Lifecycle (each step is a store write the clients see as a watch MODIFIED event):

- scheduling: ``spec.nodeName`` + ``PodScheduled=True`` (event ``Scheduled``), or
  ``PodScheduled=False reason=Unschedulable`` (event ``FailedScheduling``; retried when
  capacity frees);
- image pull: ``Pulling``/``Pulled`` events; an image that ``pullable(image)`` refuses gives
  ``waiting.reason=ErrImagePull`` then ``ImagePullBackOff`` (events ``Failed``/``BackOff``),
  retried with back-off for ever, phase stays ``Pending``;
- an unparsable image reference: ``InvalidImageName``; ``imagePullPolicy: Never`` with an image
  ``pullable`` refuses: ``ErrImageNeverPull`` (both stay ``Pending``);
- a missing Secret/ConfigMap referenced by env/envFrom/volumes: ``CreateContainerConfigError``;
- init containers: ``initContainerStatuses`` (``PodInitializing``, then ``Completed`` when the
  pod runs: the executor runs the whole pod); their requests count for scheduling;
- running: phase ``Running``, ``containerStatuses[].state.running.startedAt``, ``Ready=True``;
- exit: ``Succeeded`` (terminated ``Completed``, 0) or ``Failed`` (``Error``/exit code, or
  ``OOMKilled``/137, or the executor's own ``reason``/``message``); with
  ``terminationMessagePolicy: FallbackToLogsOnError`` a failed container's message is the
  log's tail (80 lines / 2 KiB);
- ``activeDeadlineSeconds`` (from ``status.startTime``): phase ``Failed``, ``status.reason=
  DeadlineExceeded``; eviction: ``Failed``/``Evicted`` with a ``DisruptionTarget`` condition;
- node lost: phase ``Unknown``, ``status.reason=NodeLost`` (what ``kubectl`` shows as
  Unknown), then — as PodGC does — phase ``Failed`` and the pod is deleted;
- deletion of a running pod: the executor is cancelled (event ``Killing``), then the pod is
  removed.

Not simulated: container restarts (``restartPolicy`` Always/OnFailure behave like Never: the
pod ends Succeeded/Failed, no CrashLoopBackOff), probes, volumes' contents, network policy
enforcement, preemption.

An executor is ``async def execute(pod: dict, log: Callable[[str], None]) -> ExecResult``;
what it passes to ``log`` is what the ``pods/log`` endpoint serves. It is cancelled when the
pod is killed (deadline, deletion, injected failure) and must clean up on ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from testkit.fakes.kubernetes.ids import hex_token
from testkit.fakes.kubernetes.recorder import EventRecorder
from testkit.fakes.kubernetes.resources import BY_PATH
from testkit.fakes.kubernetes.scheduler import (
    Node,
    default_nodes,
    find_node,
    pod_requests,
)
from testkit.fakes.kubernetes.selectors import parse_label_selector
from testkit.fakes.kubernetes.store import (
    PODS,
    TERMINAL,
    Store,
    WatchEvent,
    clone,
    now_iso,
)

log = logging.getLogger(__name__)

NODES = BY_PATH[("", "v1", "nodes")]
SECRETS = BY_PATH[("", "v1", "secrets")]
CONFIGMAPS = BY_PATH[("", "v1", "configmaps")]
FAILURES = ("oom", "deadline", "image_pull", "evicted", "unschedulable", "node_lost")
#: The image reference grammar (docker/distribution), simplified: [domain[:port]/]path[:tag][@digest];
#: the first part is a domain only when it has a "." or ":" or is "localhost" (else: lowercase path).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$")
_DOMAIN_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?$")


def valid_image(ref: str) -> bool:
    first, sep, rest = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return bool(_DOMAIN_RE.match(first)) and bool(_PATH_RE.match(rest))
    return bool(_PATH_RE.match(ref))


#: What FallbackToLogsOnError keeps of the log as the termination message.
TERMINATION_LOG_LINES, TERMINATION_LOG_BYTES = 80, 2048
RUNNING_FAILURES = ("oom", "deadline", "evicted", "node_lost")


@dataclass(frozen=True)
class ExecResult:
    """How the pod's program ended. ``reason``/``message`` override the terminated state's
    (e.g. ``StartError`` when the command could not be started)."""

    exit_code: int
    oom: bool = False
    reason: str | None = None
    message: str | None = None
    #: A pod-level end the executor decided (``Evicted``: past its ephemeral-storage limit).
    pod_reason: str | None = None


Executor = Callable[[dict[str, Any], Callable[[str], None]], Awaitable[ExecResult]]


async def instant_success(pod: dict[str, Any], log: Callable[[str], None]) -> ExecResult:
    """The default executor: exits 0 at once and prints nothing."""
    return ExecResult(0)


@dataclass
class PodLog:
    lines: list[tuple[str, str]] = field(default_factory=list)  # (RFC 3339 nano timestamp, text)
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def append(self, text: str) -> None:
        ts = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e9):09d}Z"
        for line in text.splitlines() or [""]:
            self.lines.append((stamp, line))
        self.changed.set()
        self.changed = asyncio.Event()

    def close(self) -> None:
        self.closed = True
        self.changed.set()


@dataclass
class InjectionRule:
    selector: Callable[[dict[str, str]], bool]
    failure: str
    remaining: int | None  # None: every matching pod


@dataclass
class PodRun:
    namespace: str
    name: str
    uid: str
    cpu: float
    memory: int
    failure: str | None = None
    node: Node | None = None
    task: asyncio.Task[None] | None = None
    stop_reason: str | None = None
    released: bool = False
    terminal: bool = False
    started: float = 0.0
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    log: PodLog = field(default_factory=PodLog)


def _cond(type_: str, status: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": now_iso()}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def _set_cond(pod: dict[str, Any], cond: dict[str, Any]) -> None:
    conds = pod["status"].setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c["type"] == cond["type"]:
            if (c["status"], c.get("reason")) == (cond["status"], cond.get("reason")):
                return
            conds[i] = cond
            return
    conds.append(cond)


def _container_id() -> str:
    return "containerd://" + hex_token(32)


def _image_id(image: str) -> str:
    return f"{image.split('@')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


class SimulatedKubelet:
    """Scheduler + kubelets of all ``nodes`` of one fake cluster (attached by FakeKubeAPI)."""

    def __init__(self, executor: Executor = instant_success, nodes: list[Node] | None = None, *,
                 pullable: Callable[[str], bool] = lambda image: True, pull_seconds: float = 0.0,
                 backoff_seconds: float = 0.05, backoff_cap: float = 1.0, fail_after: float = 0.0,
                 node_lost_grace: float = 0.1, events: bool = True) -> None:
        self.executor = executor
        self.nodes = list(nodes) if nodes is not None else default_nodes()
        self.pullable = pullable
        self.pull_seconds = pull_seconds
        self.backoff_seconds = backoff_seconds
        self.backoff_cap = backoff_cap
        self.fail_after = fail_after
        self.node_lost_grace = node_lost_grace
        self.events_enabled = events
        self.rules: list[InjectionRule] = []
        self.runs: dict[tuple[str, str], PodRun] = {}
        self.pending: dict[tuple[str, str], PodRun] = {}  # insertion order = scheduling queue
        self.never: dict[tuple[str, str], PodRun] = {}  # requests exceed every node: not retried
        self.store: Store | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.recorder: EventRecorder | None = None
        self._schedule_queued = False
        self._ip = 0
        self._images: dict[str, set[str]] = {}
        self._thread_id = 0

    # ---- wiring ------------------------------------------------------------------------
    def attach(self, store: Store) -> None:
        """Called on the server loop: register nodes and listen to pod writes."""
        self.store = store
        self.loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self.recorder = EventRecorder(store, self.events_enabled)
        for node in self.nodes:
            if store.peek(NODES, "", node.name) is None:
                store.create(NODES, "", node.manifest())
        store.listeners.append(self._on_event)

    async def shutdown(self) -> None:
        tasks = [r.task for r in self.runs.values() if r.task and not r.task.done()]
        for r in self.runs.values():
            for t in r.timers:
                t.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _emit(self, pod: dict[str, Any], reason: str, message: str, *, type: str = "Normal",
              component: str = "kubelet", container: str | None = None) -> None:
        assert self.recorder is not None
        host = pod["spec"].get("nodeName")
        field_path = None
        if container:
            inits = {c["name"] for c in pod["spec"].get("initContainers") or []}
            field_path = f"spec.{'initContainers' if container in inits else 'containers'}{{{container}}}"
        self.recorder.emit(pod, reason, message, type=type, component=component, host=host, field_path=field_path)

    def _pod(self, run: PodRun) -> dict[str, Any] | None:
        assert self.store is not None
        pod = self.store.peek(PODS, run.namespace, run.name)
        return pod if pod is not None and pod["metadata"]["uid"] == run.uid else None

    def _write(self, run: PodRun, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        assert self.store is not None
        if self._pod(run) is None:
            return None
        return self.store.mutate(PODS, run.namespace, run.name, fn)

    # ---- injection ---------------------------------------------------------------------
    def inject(self, label_selector: str, failure: str, count: int | None = None) -> None:
        """Make matching pods (existing unfinished ones and future ones) fail this way."""
        if failure not in FAILURES:
            raise ValueError(f"unknown failure {failure!r}; expected one of {', '.join(FAILURES)}")
        rule = InjectionRule(parse_label_selector(label_selector), failure, count)
        self.rules.append(rule)
        assert self.store is not None
        for run in list(self.runs.values()):
            if rule.remaining == 0:
                break
            pod = self._pod(run)
            if pod is None or run.failure or run.terminal or not rule.selector(pod["metadata"].get("labels") or {}):
                continue
            running = pod["status"].get("phase") == "Running"
            if failure in RUNNING_FAILURES:
                self._claim(rule, run)
                if running:
                    self._arm_failure(run)
            elif failure == "image_pull" and not running:
                self._claim(rule, run)
            elif failure == "unschedulable" and run.node is None:
                self._claim(rule, run)
                self.pending.pop((run.namespace, run.name), None)
                self._mark_unschedulable(run)

    def clear_injections(self) -> None:
        self.rules.clear()

    @staticmethod
    def _claim(rule: InjectionRule, run: PodRun) -> None:
        run.failure = rule.failure
        if rule.remaining is not None:
            rule.remaining -= 1

    def _match_rules(self, run: PodRun, labels: dict[str, str]) -> None:
        for rule in self.rules:
            if rule.remaining != 0 and rule.selector(labels):
                self._claim(rule, run)
                return

    def lose_node(self, name: str) -> None:
        """The whole node stops reporting: NotReady, and every pod on it is lost."""
        node = next((n for n in self.nodes if n.name == name), None)
        if node is None:
            raise ValueError(f"no node {name!r}; nodes: {', '.join(n.name for n in self.nodes)}")
        node.ready = False
        assert self.store is not None
        self.store.mutate(NODES, "", name, lambda o: o["status"].__setitem__("conditions", [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
             "message": "Kubelet stopped posting node status."}]))
        for run in list(self.runs.values()):
            if run.node is node and not run.terminal:
                self._stop(run, "node_lost")

    # ---- store events ------------------------------------------------------------------
    def _on_event(self, ev: WatchEvent) -> None:
        if ev.res is not PODS:
            return
        meta = ev.obj["metadata"]
        key = (ev.namespace, meta["name"])
        if ev.type == "ADDED":
            cpu, mem = pod_requests(ev.obj)
            run = PodRun(ev.namespace, meta["name"], meta["uid"], cpu, mem)
            self.runs[key] = run
            self._match_rules(run, meta.get("labels") or {})
            if ev.obj["spec"].get("nodeName"):
                node = next((n for n in self.nodes if n.name == ev.obj["spec"]["nodeName"]), None)
                if node is not None:
                    self._bind_accounting(run, node)
                    run.task = asyncio.get_running_loop().create_task(self._run(run))
                return
            if run.failure == "unschedulable":
                asyncio.get_running_loop().call_soon(self._mark_unschedulable, run)
                return
            self.pending[key] = run
            self._schedule_soon()
        elif ev.type == "MODIFIED":
            run = self.runs.get(key)
            if run and meta.get("deletionTimestamp") and not (ev.old or {}).get("metadata", {}).get(
                    "deletionTimestamp"):
                self._stop(run, "deleted")
        elif ev.type == "DELETED":
            run = self.runs.pop(key, None)
            if run is None or run.uid != meta["uid"]:
                if run is not None:
                    self.runs[key] = run
                return
            self.pending.pop(key, None)
            self.never.pop(key, None)
            for t in run.timers:
                t.cancel()
            if run.task and not run.task.done() and run.stop_reason is None:
                run.stop_reason = "removed"
                run.task.cancel()
            run.log.close()
            self._release(run)
            if self.recorder:
                self.recorder.forget(run.uid)

    # ---- scheduler ---------------------------------------------------------------------
    def _schedule_soon(self) -> None:
        if not self._schedule_queued and self.pending:
            self._schedule_queued = True
            asyncio.get_running_loop().call_soon(self._schedule)

    def _forced_unschedulable_message(self) -> str:
        n = len(self.nodes)
        return (f"0/{n} nodes are available: {n} Insufficient memory. preemption: 0/{n} nodes are available: "
                f"{n} No preemption victims found for incoming pod.")

    def _schedule(self) -> None:
        self._schedule_queued = False
        for key, run in list(self.pending.items()):
            pod = self._pod(run)
            if pod is None:
                self.pending.pop(key, None)
                continue
            node, message, fits_ever = find_node(self.nodes, pod, run.cpu, run.memory)
            if node is None:
                if not fits_ever:
                    self.pending.pop(key, None)
                    self.never[key] = run
                self._unschedulable(run, pod, message)
                continue
            self.pending.pop(key, None)
            self._bind_accounting(run, node)
            self._bind(run, node)

    def _mark_unschedulable(self, run: PodRun) -> None:
        pod = self._pod(run)
        if pod is not None:
            self._unschedulable(run, pod, self._forced_unschedulable_message())

    def _unschedulable(self, run: PodRun, pod: dict[str, Any], message: str) -> None:
        conds = pod["status"].get("conditions") or []
        if any(c["type"] == "PodScheduled" and c.get("message") == message for c in conds):
            return
        self._write(run, lambda p: _set_cond(p, _cond("PodScheduled", "False", "Unschedulable", message)))
        self._emit(pod, "FailedScheduling", message, type="Warning", component="default-scheduler")

    def _bind_accounting(self, run: PodRun, node: Node) -> None:
        run.node = node
        node.used_cpu += run.cpu
        node.used_memory += run.memory
        node.used_pods += 1

    def _release(self, run: PodRun) -> None:
        if run.node is not None and not run.released:
            run.released = True
            run.node.used_cpu -= run.cpu
            run.node.used_memory -= run.memory
            run.node.used_pods -= 1
            if self.pending:
                self._schedule_soon()

    def _bind(self, run: PodRun, node: Node) -> None:
        def bind(p: dict[str, Any]) -> None:
            p["spec"]["nodeName"] = node.name
            _set_cond(p, _cond("PodScheduled", "True"))

        pod = self._write(run, bind)
        if pod is None:
            return
        self._emit(pod, "Scheduled", f"Successfully assigned {run.namespace}/{run.name} to {node.name}",
                   component="default-scheduler")
        run.task = asyncio.get_running_loop().create_task(self._run(run))

    # ---- kubelet -----------------------------------------------------------------------
    def _stop(self, run: PodRun, reason: str) -> None:
        """Interrupt a pod's run (deadline, deletion, injected failure)."""
        if run.terminal and reason != "deleted":
            return
        if run.stop_reason in ("deleted", "removed"):
            return
        if run.task is None or run.task.done():
            if reason == "deleted":
                asyncio.get_running_loop().create_task(self._finish_deletion(run))
            return
        run.stop_reason = reason
        run.task.cancel()

    async def _finish_deletion(self, run: PodRun) -> None:
        assert self.store is not None
        pod = self._pod(run)
        if pod is None:
            return
        if not run.terminal:
            for c in pod["spec"]["containers"]:
                self._emit(pod, "Killing", f"Stopping container {c['name']}", container=c["name"])
        self._release(run)
        run.log.close()
        self.store.remove(PODS, run.namespace, run.name)

    async def _run(self, run: PodRun) -> None:
        try:
            pod = self._pod(run)
            if pod is None:
                return
            run.started = time.monotonic()
            self._start_pod(run)
            deadline = pod["spec"].get("activeDeadlineSeconds")
            loop = asyncio.get_running_loop()
            if deadline:
                run.timers.append(loop.call_later(deadline, self._stop, run, "deadline"))
            await self._prepare(run)
            self._set_running(run)
            if run.failure in RUNNING_FAILURES:
                self._arm_failure(run)
            pod = self._pod(run)
            if pod is None:
                return
            result = await self.executor(clone(pod), self._logger(run))
            if run.failure in RUNNING_FAILURES:
                # The injected failure wins even when the program ended first.
                run.stop_reason = run.failure
                await self._interrupted(run)
                return
            self._set_terminated(run, result)
        except asyncio.CancelledError:
            await self._handle_stop(run)
        except Exception as exc:  # an executor bug: the container "crashes"
            log.exception("executor failed for %s/%s", run.namespace, run.name)
            run.log.append(f"fake kubelet: executor raised {type(exc).__name__}: {exc}")
            self._set_terminated(run, ExecResult(128))
        finally:
            for t in run.timers:
                t.cancel()

    async def _handle_stop(self, run: PodRun) -> None:
        """After a cancel: apply ``run.stop_reason``; a later stop (e.g. deletion during a
        node-lost grace) takes over; a cancel without a reason propagates."""
        while True:
            reason = run.stop_reason
            if reason in (None, "removed"):
                raise asyncio.CancelledError
            try:
                await self._interrupted(run)
                return
            except asyncio.CancelledError:
                if run.stop_reason == reason:
                    raise

    def _arm_failure(self, run: PodRun) -> None:
        assert self.loop is not None
        run.timers.append(self.loop.call_later(self.fail_after, self._stop, run, run.failure or "oom"))

    def _logger(self, run: PodRun) -> Callable[[str], None]:
        def write(text: str) -> None:
            if threading.get_ident() == self._thread_id:
                run.log.append(text)
            elif self.loop is not None:
                self.loop.call_soon_threadsafe(run.log.append, text)
        return write

    def _start_pod(self, run: PodRun) -> None:
        self._ip += 1
        ip = f"10.244.{(self._ip >> 8) & 255}.{self._ip & 255}"
        host_ip = f"192.168.0.{self.nodes.index(run.node) + 10 if run.node in self.nodes else 10}"

        def start(p: dict[str, Any]) -> None:
            st = p["status"]
            st.update(startTime=now_iso(), hostIP=host_ip, hostIPs=[{"ip": host_ip}], podIP=ip, podIPs=[{"ip": ip}])
            for c in ("PodReadyToStartContainers", "Initialized"):
                _set_cond(p, _cond(c, "True"))  # Initialized is set False below when there are init containers
            _set_cond(p, _cond("Ready", "False", "ContainersNotReady", "containers with unready status: [" +
                               " ".join(c["name"] for c in p["spec"]["containers"]) + "]"))
            _set_cond(p, _cond("ContainersReady", "False", "ContainersNotReady", "containers with unready status: ["
                               + " ".join(c["name"] for c in p["spec"]["containers"]) + "]"))
            inits = p["spec"].get("initContainers") or []
            waiting = "PodInitializing" if inits else "ContainerCreating"
            st["containerStatuses"] = [
                {"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "started": False,
                 "restartCount": 0, "state": {"waiting": {"reason": waiting}}, "lastState": {}}
                for c in p["spec"]["containers"]]
            if inits:
                st["initContainerStatuses"] = [
                    {"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "started": False,
                     "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}, "lastState": {}}
                    for c in inits]
                _set_cond(p, _cond("Initialized", "False", "ContainersNotInitialized",
                                   "containers with incomplete status: [" + " ".join(c["name"] for c in inits) + "]"))

        self._write(run, start)

    def _waiting(self, run: PodRun, container: str, reason: str, message: str) -> None:
        def wait(p: dict[str, Any]) -> None:
            st = p["status"]
            for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
                if cs["name"] == container:
                    cs["state"] = {"waiting": {"reason": reason, "message": message}}
        self._write(run, wait)

    def _missing_refs(self, pod: dict[str, Any]) -> str | None:
        assert self.store is not None
        ns = pod["metadata"]["namespace"]
        refs: list[tuple[str, str, bool]] = []
        for c in pod["spec"]["containers"]:
            for env in c.get("env") or []:
                src = env.get("valueFrom") or {}
                for kind, key in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
                    if src.get(key):
                        refs.append((kind, src[key].get("name", ""), bool(src[key].get("optional"))))
            for env in c.get("envFrom") or []:
                for kind, key in (("secret", "secretRef"), ("configmap", "configMapRef")):
                    if env.get(key):
                        refs.append((kind, env[key].get("name", ""), bool(env[key].get("optional"))))
        for vol in pod["spec"].get("volumes") or []:
            if vol.get("secret"):
                refs.append(("secret", vol["secret"].get("secretName", ""), bool(vol["secret"].get("optional"))))
            if vol.get("configMap"):
                refs.append(("configmap", vol["configMap"].get("name", ""), bool(vol["configMap"].get("optional"))))
        for kind, name, optional in refs:
            res = SECRETS if kind == "secret" else CONFIGMAPS
            if not optional and self.store.peek(res, ns, name) is None:
                return f'{kind} "{name}" not found'
        return None

    async def _prepare(self, run: PodRun) -> None:
        """Config references and image pulls; loops (with back-off) while they fail."""
        delay = self.backoff_seconds
        while True:
            pod = self._pod(run)
            if pod is None:
                raise asyncio.CancelledError
            missing = self._missing_refs(pod)
            if missing is None:
                break
            for c in pod["spec"]["containers"]:
                self._waiting(run, c["name"], "CreateContainerConfigError", missing)
                self._emit(pod, "Failed", f"Error: {missing}", type="Warning", container=c["name"])
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.backoff_cap)
        node_images = self._images.setdefault(run.node.name if run.node else "", set())
        for c in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            image, name = c["image"], c["name"]
            if not valid_image(image):
                msg = (f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": '
                       "invalid reference format")
                self._waiting(run, name, "InvalidImageName", msg)
                self._emit(pod, "InspectFailed", msg, type="Warning", container=name)
                self._emit(pod, "Failed", "Error: InvalidImageName", type="Warning", container=name)
                await asyncio.Event().wait()  # stays Pending until deleted or past its deadline
            if c.get("imagePullPolicy") == "Never":
                if run.failure == "image_pull" or not self.pullable(image):
                    msg = f'Container image "{image}" is not present with pull policy of Never'
                    self._waiting(run, name, "ErrImageNeverPull", msg)
                    self._emit(pod, "ErrImageNeverPull", msg, type="Warning", container=name)
                    self._emit(pod, "Failed", "Error: ErrImageNeverPull", type="Warning", container=name)
                    await asyncio.Event().wait()
                self._emit(pod, "Pulled", f'Container image "{image}" already present on machine', container=name)
                continue
            if c.get("imagePullPolicy") != "Always" and image in node_images and run.failure != "image_pull":
                self._emit(pod, "Pulled", f'Container image "{image}" already present on machine', container=name)
                continue
            delay = self.backoff_seconds
            while True:
                self._emit(pod, "Pulling", f'Pulling image "{image}"', container=name)
                if self.pull_seconds:
                    await asyncio.sleep(self.pull_seconds)
                if run.failure != "image_pull" and self.pullable(image):
                    break
                err = (f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": failed to '
                       f'resolve reference "{image}": {image}: not found')
                self._waiting(run, name, "ErrImagePull", err)
                self._emit(pod, "Failed", f'Failed to pull image "{image}": {err}', type="Warning", container=name)
                self._emit(pod, "Failed", "Error: ErrImagePull", type="Warning", container=name)
                await asyncio.sleep(delay)
                self._waiting(run, name, "ImagePullBackOff", f'Back-off pulling image "{image}": ErrImagePull: {err}')
                self._emit(pod, "BackOff", f'Back-off pulling image "{image}"', container=name)
                self._emit(pod, "Failed", "Error: ImagePullBackOff", type="Warning", container=name)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_cap)
            node_images.add(image)
            self._emit(pod, "Pulled", f'Successfully pulled image "{image}" in {self.pull_seconds:.3f}s '
                       f"({self.pull_seconds:.3f}s including waiting). Image size: 0 bytes.", container=name)

    def _set_running(self, run: PodRun) -> None:
        now = now_iso()

        def running(p: dict[str, Any]) -> None:
            p["status"]["phase"] = "Running"
            statuses = []
            for c in p["spec"]["containers"]:
                statuses.append({"name": c["name"], "image": c["image"], "imageID": _image_id(c["image"]),
                                 "containerID": _container_id(), "ready": True, "started": True, "restartCount": 0,
                                 "state": {"running": {"startedAt": now}}, "lastState": {}})
            p["status"]["containerStatuses"] = statuses
            inits = p["spec"].get("initContainers") or []
            if inits:  # the executor runs the whole pod; init containers count as completed
                p["status"]["initContainerStatuses"] = [
                    {"name": c["name"], "image": c["image"], "imageID": _image_id(c["image"]),
                     "containerID": _container_id(), "ready": True, "started": False, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now,
                                              "finishedAt": now}}, "lastState": {}} for c in inits]
                _set_cond(p, _cond("Initialized", "True"))
            _set_cond(p, _cond("ContainersReady", "True"))
            _set_cond(p, _cond("Ready", "True"))

        pod = self._write(run, running)
        if pod is None:
            raise asyncio.CancelledError
        for c in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            self._emit(pod, "Created", f"Created container: {c['name']}", container=c["name"])
            self._emit(pod, "Started", f"Started container {c['name']}", container=c["name"])

    def _terminate(self, run: PodRun, *, exit_code: int, reason: str, phase: str,
                   pod_reason: str | None = None, message: str | None = None, container_message: str | None = None,
                   extra: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any] | None:
        now = now_iso()
        run.terminal = True

        def term(p: dict[str, Any]) -> None:
            st = p["status"]
            st["phase"] = phase
            if pod_reason:
                st["reason"] = pod_reason
            if message:
                st["message"] = message
            policies = {c["name"]: c.get("terminationMessagePolicy") for c in p["spec"]["containers"]}
            for cs in st.get("containerStatuses") or []:
                started = (cs["state"].get("running") or {}).get("startedAt")
                term_state: dict[str, Any] = {"exitCode": exit_code, "reason": reason, "finishedAt": now}
                text = container_message
                if text is None and exit_code != 0 and policies.get(cs["name"]) == "FallbackToLogsOnError":
                    tail = "".join(f"{line}\n" for _ts, line in run.log.lines[-TERMINATION_LOG_LINES:])
                    text = tail.encode()[-TERMINATION_LOG_BYTES:].decode(errors="ignore") or None
                if text:
                    term_state["message"] = text
                if started:
                    term_state["startedAt"] = started
                if cs.get("containerID"):
                    term_state["containerID"] = cs["containerID"]
                cs["state"] = {"terminated": term_state}
                cs["ready"], cs["started"] = False, False
            done = "PodCompleted" if phase == "Succeeded" else "PodFailed"
            _set_cond(p, _cond("Ready", "False", done))
            _set_cond(p, _cond("ContainersReady", "False", done))
            _set_cond(p, _cond("PodReadyToStartContainers", "False"))
            if extra:
                extra(p)

        pod = self._write(run, term)
        run.log.close()
        self._release(run)
        return pod

    def _set_terminated(self, run: PodRun, result: ExecResult) -> None:
        if result.pod_reason:
            self._terminate(run, exit_code=result.exit_code, reason="Error", phase="Failed",
                            pod_reason=result.pod_reason, message=result.message)
        elif result.oom:
            self._terminate(run, exit_code=137, reason=result.reason or "OOMKilled", phase="Failed",
                            container_message=result.message)
        elif result.exit_code == 0:
            self._terminate(run, exit_code=0, reason=result.reason or "Completed", phase="Succeeded",
                            container_message=result.message)
        else:
            self._terminate(run, exit_code=result.exit_code, reason=result.reason or "Error", phase="Failed",
                            container_message=result.message)

    async def _interrupted(self, run: PodRun) -> None:
        reason = run.stop_reason
        pod = self._pod(run)
        if pod is None:
            return
        containers = [c["name"] for c in pod["spec"]["containers"]]
        if reason == "deleted":
            await self._finish_deletion(run)
        elif reason == "oom":
            self._terminate(run, exit_code=137, reason="OOMKilled", phase="Failed")
        elif reason == "deadline":
            self._emit(pod, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
            for c in containers:
                self._emit(pod, "Killing", f"Stopping container {c}", container=c)
            self._terminate(run, exit_code=137, reason="Error", phase="Failed", pod_reason="DeadlineExceeded",
                            message="Pod was active on the node longer than the specified deadline")
        elif reason == "evicted":
            msg = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi. Container "
                   f"{containers[0]} was using 2Gi, request is 0, has larger consumption of memory. ")
            self._emit(pod, "Evicted", msg, type="Warning")
            for c in containers:
                self._emit(pod, "Killing", f"Stopping container {c}", container=c)
            self._terminate(run, exit_code=137, reason="Error", phase="Failed", pod_reason="Evicted", message=msg,
                            extra=lambda p: _set_cond(p, _cond("DisruptionTarget", "True", "TerminationByKubelet",
                                                               "The node was low on resource: memory.")))
        elif reason == "node_lost":
            await self._node_lost(run, pod)

    async def _node_lost(self, run: PodRun, pod: dict[str, Any]) -> None:
        assert self.store is not None
        node = pod["spec"].get("nodeName", "")
        run.terminal = True
        run.log.close()

        def unknown(p: dict[str, Any]) -> None:
            p["status"].update(phase="Unknown", reason="NodeLost",
                               message=f"Node {node} which was running pod {run.name} is unresponsive")
            _set_cond(p, _cond("Ready", "False", "NodeLost"))

        pod = self._write(run, unknown) or pod
        self._emit(pod, "NodeNotReady", "Node is not ready", type="Warning", component="node-controller")
        await asyncio.sleep(self.node_lost_grace)

        def gc(p: dict[str, Any]) -> None:
            p["status"]["phase"] = "Failed"
            p["metadata"].setdefault("deletionTimestamp", now_iso())
            p["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            _set_cond(p, _cond("DisruptionTarget", "True", "DeletionByPodGC",
                               "PodGC: node no longer exists"))

        if self._write(run, gc) is not None:
            self._release(run)
            self.store.remove(PODS, run.namespace, run.name)

    # ---- logs --------------------------------------------------------------------------
    def pod_log(self, namespace: str, name: str) -> PodLog | None:
        run = self.runs.get((namespace, name))
        return run.log if run else None


__all__ = ["FAILURES", "TERMINAL", "ExecResult", "Executor", "Node", "SimulatedKubelet", "instant_success"]
