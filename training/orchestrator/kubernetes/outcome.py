"""Read a pod's status (the API's JSON) into what the backend does next (DESIGN §5 classes).

:class:`PodTracker` keeps, per pod, when each waiting condition was first seen, so that
transient states (a pull that is retried, a pod waiting for the autoscaler) get a grace
period; everything else is a pure function of the pod object and the clock.

| Kubernetes says | verdict |
|---|---|
| ``status.reason == DeadlineExceeded`` (activeDeadlineSeconds) | terminal, ``timeout``/``deadline_exceeded`` |
| ``status.reason == Evicted`` (node pressure, eviction API) | terminal, ``evicted`` |
| node lost: ``status.reason == NodeLost``, phase ``Unknown``, or ``DisruptionTarget`` by the taint manager | terminal, ``node_lost`` |
| waiting ``InvalidImageName``/``ErrImageNeverPull``; ``ErrImagePull``/``ImagePullBackOff`` past the grace | terminal, ``image_pull`` |
| ``PodScheduled=False`` ``Unschedulable`` past the grace | terminal, ``unschedulable`` |
| Pending past ``pending_timeout`` | terminal, ``unschedulable`` (never scheduled) or ``start_failed`` |
| waiting ``CreateContainer(Config)Error``/``RunContainerError`` past the grace; an init container failed; kubelet admission refused (``OutOfcpu`` ...) | terminal, ``start_failed`` |
| sandbox container terminated (``Succeeded``/``Failed``) | terminal, its exit code and ``OOMKilled`` |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from environments.records import ErrorKind
from training.orchestrator.kubernetes.manifest import CONTAINER

PULL_FATAL = ("InvalidImageName", "ErrImageNeverPull")
PULL_RETRIED = ("ErrImagePull", "ImagePullBackOff", "RegistryUnavailable")
CREATE_FAILED = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError",
                 "PreStartHookError")
NODE_LOST_REASONS = ("NodeLost", "NodeShutdown", "Terminated")
DISRUPTION_NODE_LOST = ("DeletionByTaintManager", "DeletionByPodGC")


@dataclass
class PodVerdict:
    """``terminal``: the pod is over (or must be treated so); ``running``: the sandbox started."""

    terminal: bool = False
    running: bool = False
    exit_code: int | None = None
    oom: bool = False
    error_kind: ErrorKind | None = None  # set for failures Kubernetes caused (no exit code to judge)
    timeout: bool = False
    message: str = ""


@dataclass
class Thresholds:
    pending_timeout: float = 300.0
    unschedulable_grace: float = 60.0
    image_pull_grace: float = 30.0


def _statuses(pod: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return list((pod.get("status") or {}).get(key) or [])


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def _describe(pod: dict[str, Any], reason: str, message: str | None) -> str:
    name = (pod.get("metadata") or {}).get("name", "?")
    return f"pod {name}: {reason}" + (f": {message.strip()[:300]}" if message else "")


@dataclass
class PodTracker:
    """Verdicts for one pod over time (see the module doc)."""

    created_at: float
    thresholds: Thresholds = field(default_factory=Thresholds)
    first_seen: dict[str, float] = field(default_factory=dict)

    def _since(self, key: str, now: float) -> float:
        return now - self.first_seen.setdefault(key, now)

    def observe(self, pod: dict[str, Any], now: float) -> PodVerdict:
        status = pod.get("status") or {}
        phase = status.get("phase") or "Pending"
        reason = status.get("reason") or ""
        message = status.get("message")
        if reason == "DeadlineExceeded":
            return PodVerdict(terminal=True, timeout=True, error_kind=ErrorKind.deadline_exceeded,
                              message=_describe(pod, "activeDeadlineSeconds exceeded (DeadlineExceeded)", message))
        if reason == "Evicted":
            return PodVerdict(terminal=True, error_kind=ErrorKind.evicted, message=_describe(pod, "Evicted", message))
        disruption = _condition(pod, "DisruptionTarget")
        lost = reason in NODE_LOST_REASONS or phase == "Unknown" or (
            disruption is not None and disruption.get("status") == "True"
            and disruption.get("reason") in DISRUPTION_NODE_LOST)
        if lost and phase not in ("Succeeded",):
            return PodVerdict(terminal=True, error_kind=ErrorKind.node_lost,
                              message=_describe(pod, f"node lost ({reason or phase or disruption.get('reason')})",
                                                message or (disruption or {}).get("message")))
        sandbox = next((c for c in _statuses(pod, "containerStatuses") if c.get("name") == CONTAINER), None)
        terminated = ((sandbox or {}).get("state") or {}).get("terminated")
        if phase in ("Succeeded", "Failed"):
            if terminated is not None:
                code = terminated.get("exitCode")
                oom = terminated.get("reason") == "OOMKilled"
                return PodVerdict(terminal=True, running=True, exit_code=code, oom=oom,
                                  error_kind=ErrorKind.oom if oom else None,
                                  message=_describe(pod, f"container exited {code} ({terminated.get('reason')})",
                                                    terminated.get("message")))
            for init in _statuses(pod, "initContainerStatuses"):
                term = (init.get("state") or {}).get("terminated")
                if term and term.get("exitCode"):
                    oom = term.get("reason") == "OOMKilled"
                    return PodVerdict(terminal=True, error_kind=ErrorKind.oom if oom else ErrorKind.start_failed,
                                      message=_describe(pod, f"init container {init.get('name')} exited "
                                                        f"{term.get('exitCode')} ({term.get('reason')})", term.get("message")))
            # Admission refused by the kubelet (OutOfcpu, OutOfmemory, NodeAffinity, ...).
            return PodVerdict(terminal=True, error_kind=ErrorKind.start_failed,
                              message=_describe(pod, f"pod {phase} ({reason or 'no reason given'})", message))
        # -- not over yet: waiting reasons (init containers first, they run first) --------
        for cs in _statuses(pod, "initContainerStatuses") + _statuses(pod, "containerStatuses"):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            why = waiting.get("reason") or ""
            what = f"container {cs.get('name')} waiting: {why}"
            if why in PULL_FATAL:
                return PodVerdict(terminal=True, error_kind=ErrorKind.image_pull,
                                  message=_describe(pod, what, waiting.get("message")))
            if why in PULL_RETRIED and self._since("pull", now) >= self.thresholds.image_pull_grace:
                return PodVerdict(terminal=True, error_kind=ErrorKind.image_pull,
                                  message=_describe(pod, what, waiting.get("message")))
            if why in CREATE_FAILED and self._since("create", now) >= self.thresholds.image_pull_grace:
                return PodVerdict(terminal=True, error_kind=ErrorKind.start_failed,
                                  message=_describe(pod, what, waiting.get("message")))
        scheduled = _condition(pod, "PodScheduled")
        unschedulable = scheduled is not None and scheduled.get("status") == "False" \
            and scheduled.get("reason") == "Unschedulable"
        if unschedulable and self._since("unschedulable", now) >= self.thresholds.unschedulable_grace:
            return PodVerdict(terminal=True, error_kind=ErrorKind.unschedulable,
                              message=_describe(pod, "Unschedulable", scheduled.get("message")))
        if phase == "Running" or (sandbox or {}).get("state", {}).get("running"):
            return PodVerdict(running=True)
        if phase == "Pending" and now - self.created_at >= self.thresholds.pending_timeout:
            never_scheduled = scheduled is None or scheduled.get("status") != "True"
            kind = ErrorKind.unschedulable if never_scheduled else ErrorKind.start_failed
            return PodVerdict(terminal=True, error_kind=kind,
                              message=_describe(pod, f"Pending for {now - self.created_at:.0f}s "
                                                f"(pending_timeout {self.thresholds.pending_timeout:g}s)",
                                                (scheduled or {}).get("message")))
        return PodVerdict()
