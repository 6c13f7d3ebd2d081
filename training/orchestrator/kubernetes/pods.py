"""The run's pods: creating each (Secret + Pod, under the ``max_pods`` cap and the
``create_qps`` token bucket), following it (watch events and a once-a-second re-judge for
grace periods that expire without an event) to a :class:`PodVerdict`, and deleting it."""

from __future__ import annotations

import asyncio
import logging
import secrets as pysecrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from environments.deadline import hard_deadline
from environments.records import ErrorKind, RolloutSpec
from environments.taskdir import TaskDir
from openforge.aio import outlast
from training.orchestrator.backend import SandboxError
from training.orchestrator.kubernetes.api import KubeApi, KubeError
from training.orchestrator.kubernetes.config import KubeSettings
from training.orchestrator.kubernetes.control import ControlServer, PodSlot
from training.orchestrator.kubernetes.images import PodImage
from training.orchestrator.kubernetes.manifest import (
    ANNOTATION_TASK,
    LABEL_IMAGE,
    LABEL_POOL,
    LABEL_ROLLOUT,
    LABEL_TASK,
    SECRET_FINISH_KEY,
    SECRET_POD_KEY,
    SECRET_TOKEN,
    OwnerRef,
    PodPlan,
    image_label,
    label_value,
    pod_name,
    pod_secret,
    rollout_pod,
)
from training.orchestrator.kubernetes.outcome import PodTracker, PodVerdict, Thresholds
from training.orchestrator.kubernetes.ratelimit import TokenBucket

log = logging.getLogger(__name__)


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


class PodFleet:
    """The pods of one run, by name. ``stats`` counts ``pods_created`` and ``pods_deleted``
    (the backend's dict, shared)."""

    def __init__(self, api: KubeApi, settings: KubeSettings, control: ControlServer, labels: dict[str, str],
                 owner: OwnerRef | None, stats: dict[str, int]) -> None:
        self.api, self.settings, self.control, self.labels, self.owner = api, settings, control, labels, owner
        self.stats = stats
        self.thresholds = Thresholds(pending_timeout=settings.pending_timeout,
                                     unschedulable_grace=settings.unschedulable_grace,
                                     image_pull_grace=settings.image_pull_grace)
        self.pods: dict[str, PodState] = {}
        self._cap = asyncio.Semaphore(settings.max_pods)
        self._bucket = TokenBucket(settings.create_qps, settings.create_burst)

    # -- create and delete ----------------------------------------------------------------
    async def create(self, image: PodImage, task: TaskDir, spec: RolloutSpec | None) -> PodState:
        """Secret + Pod for a rollout (``spec``) or for a warm pool (``spec=None``); holds a cap slot."""
        s = self.settings
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
        self.pods[name] = state
        cfg = task.config.environment
        plan = PodPlan(name=name, image=image.ref, workdir=image.workdir, labels=labels, secret_name=name,
                       control_url=self.control.url, cpus=cfg.cpus, memory_mb=cfg.memory_mb,
                       storage_mb=cfg.storage_mb, gpus=cfg.gpus,
                       deadline_seconds=hard_deadline(spec.timeout_sec) if spec is not None else None,
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
            await outlast(self.release(state))
            if isinstance(exc, KubeError):
                raise SandboxError(f"pod {name} not created: {exc}", kind=ErrorKind.start_failed) from exc
            raise
        return state

    async def release(self, state: PodState, *, grace: int | None = None) -> None:
        """Delete the pod and its Secret, forget its slot, free its cap slot (idempotent)."""
        if state.released:
            return
        state.released = True
        state.deleting = True
        try:
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
            self.pods.pop(state.name, None)
            state.finish(PodVerdict(terminal=True, message="released"))
            self._cap.release()

    async def delete_now(self, state: PodState) -> None:
        """Delete the pod (a cancel): its verdict comes from the watch; the Secret stays until ``release``."""
        state.deleting = True
        try:
            await self.api.delete("Pod", state.name, grace_seconds=self.settings.delete_grace_seconds)
        except KubeError as exc:
            log.debug("cancel %s: %s", state.name, exc)

    async def label_claimed(self, state: PodState, spec: RolloutSpec) -> None:
        """Label a claimed warm pod with its rollout and give it the rollout's deadline."""
        labels = {LABEL_ROLLOUT: label_value(spec.rollout_id), LABEL_POOL: "claimed"}
        if spec.task_id:
            labels[LABEL_TASK] = label_value(spec.task_id)
        age = time.monotonic() - state.created_at
        patch = {"metadata": {"labels": labels}, "spec": {"activeDeadlineSeconds": int(age + hard_deadline(spec.timeout_sec)) + 1}}
        try:
            await self.api.patch_pod(state.name, patch)
        except KubeError as exc:
            log.warning("claimed warm pod %s: could not label it: %s", state.name, exc)

    # -- follow ---------------------------------------------------------------------------
    def expected(self, before: float) -> list[str]:
        """Pods the API accepted before ``before``: a full list taken after must show them."""
        return [s.name for s in self.pods.values() if s.confirmed_at is not None and s.confirmed_at < before]

    def on_event(self, kind: str, pod: dict[str, Any]) -> None:
        """A watch event (or a resync's GONE) about one of the run's pods."""
        state = self.pods.get((pod.get("metadata") or {}).get("name", ""))
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

    async def tick(self) -> None:
        """Re-judge waiting pods once a second (grace periods and pending timeouts expire
        without any new event); runs until cancelled."""
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for state in list(self.pods.values()):
                if state.verdict.done() or state.running_at is not None:
                    continue
                if state.last is None:
                    state.last = {"metadata": {"name": state.name}, "status": {"phase": "Pending"}}
                self._judge(state, now)
