"""core/v1 Events as the scheduler, kubelet and controllers emit them (repeats of the same
reason and message on one object are aggregated: ``count`` goes up, as client-go does)."""

from __future__ import annotations

from typing import Any

from testkit.fakes.kubernetes.ids import hex_token
from testkit.fakes.kubernetes.resources import BY_PATH
from testkit.fakes.kubernetes.status import ApiError
from testkit.fakes.kubernetes.store import Store, now_iso

EVENTS = BY_PATH[("", "v1", "events")]


class EventRecorder:
    def __init__(self, store: Store, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled
        self._seen: dict[str, dict[tuple[str, str], str]] = {}  # uid -> (reason, message) -> event name

    def emit(self, obj: dict[str, Any], reason: str, message: str, *, type: str = "Normal",
             component: str = "kubelet", host: str | None = None, field_path: str | None = None) -> None:
        if not self.enabled:
            return
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        seen = self._seen.setdefault(meta["uid"], {})
        key = (reason, message)
        now = now_iso()
        name = seen.get(key)
        if name is not None and self.store.peek(EVENTS, ns, name) is not None:
            self.store.mutate(EVENTS, ns, name, lambda e: e.update(count=e.get("count", 1) + 1, lastTimestamp=now))
            return
        name = f"{meta['name']}.{hex_token(8)}"
        involved = {"kind": obj.get("kind", "Pod"), "namespace": ns, "name": meta["name"], "uid": meta["uid"],
                    "apiVersion": obj.get("apiVersion", "v1"), "resourceVersion": meta.get("resourceVersion", "")}
        if field_path:
            involved["fieldPath"] = field_path
        source: dict[str, str] = {"component": component}
        if host:
            source["host"] = host
        event = {"metadata": {"name": name, "namespace": ns}, "involvedObject": involved, "reason": reason,
                 "message": message, "source": source, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                 "type": type, "eventTime": None, "reportingComponent": component,
                 "reportingInstance": host or ""}
        try:
            self.store.create(EVENTS, ns, event)
        except ApiError:  # namespace gone or terminating: real recorders drop the event too
            return
        seen[key] = name

    def forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
