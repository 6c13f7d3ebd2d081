"""The fake API server's storage: objects, one global resourceVersion, the watch history,
watchers, owner-reference garbage collection, finalizers, graceful pod deletion and
namespace teardown. Every method runs on the server's event loop thread (no locks).

Costs: get/create/update/delete are O(1) dict operations plus O(watchers) fan-out; the
history is a list indexed by ``rv - base`` (each write is exactly one event), so resuming a
watch from a resourceVersion is a slice, not a scan. Only list requests touch every object
of a namespace (as on a real server).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from testkit.fakes.kubernetes.ids import name_suffix, new_uid
from testkit.fakes.kubernetes.resources import BY_PATH, Resource
from testkit.fakes.kubernetes.selectors import parse_field_selector, parse_label_selector
from testkit.fakes.kubernetes.status import ApiError, success_status
from testkit.fakes.kubernetes.validation import (
    check_keys,
    check_metadata,
    check_pod_update,
    check_secret,
    default_and_validate,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[Resource, str, str]  # (resource, namespace or "", name)
PODS = BY_PATH[("", "v1", "pods")]
NAMESPACES = BY_PATH[("", "v1", "namespaces")]
SERVICEACCOUNTS = BY_PATH[("", "v1", "serviceaccounts")]
STATUS_SUBRESOURCE = {"pods", "namespaces", "nodes"}
TERMINAL = ("Succeeded", "Failed")


def clone(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


def now_iso(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    res: Resource
    namespace: str
    obj: Obj  # never mutated after it is stored
    old: Obj | None = None
    _lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, kind: str | None = None) -> bytes:
        kind = kind or self.type
        if kind not in self._lines:
            self._lines[kind] = orjson.dumps({"type": kind, "object": self.obj}) + b"\n"
        return self._lines[kind]


@dataclass
class Watcher:
    res: Resource
    namespace: str | None
    labels: Callable[[dict[str, str]], bool]
    fields: Callable[[Obj], bool]
    queue: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)

    def matches(self, obj: Obj | None) -> bool:
        return obj is not None and self.labels((obj.get("metadata") or {}).get("labels") or {}) and self.fields(obj)

    def translate(self, ev: WatchEvent) -> bytes | None:
        """The line this watcher gets for ``ev`` (selector transitions become ADDED/DELETED)."""
        if self.namespace is not None and ev.namespace != self.namespace:
            return None
        new = self.matches(ev.obj)
        if ev.type == "MODIFIED":
            old = self.matches(ev.old)
            if old and new:
                return ev.line()
            if new:
                return ev.line("ADDED")
            if old:
                return ev.line("DELETED")
            return None
        return ev.line() if new else None


class Store:
    """All objects of the fake cluster."""

    def __init__(self, history: int = 20_000) -> None:
        self.rv = 1
        self.tables: dict[Resource, dict[str, dict[str, Obj]]] = {}
        self.by_uid: dict[str, Key] = {}
        self.dependents: dict[str, set[Key]] = {}
        self.history: list[WatchEvent] = []
        self.history_base = 2  # rv of history[0]
        self.history_cap = history  # kept: between history and 2 x history events
        self.watchers: dict[Resource, list[Watcher]] = {}
        self.listeners: list[Callable[[WatchEvent], None]] = []
        self.writes = 0
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(NAMESPACES, "", {"metadata": {"name": ns}})

    # ---- reads --------------------------------------------------------------------------
    def table(self, res: Resource, namespace: str) -> dict[str, Obj]:
        return self.tables.setdefault(res, {}).setdefault(namespace if res.namespaced else "", {})

    def peek(self, res: Resource, namespace: str, name: str) -> Obj | None:
        return self.tables.get(res, {}).get(namespace if res.namespaced else "", {}).get(name)

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        obj = self.peek(res, namespace, name)
        if obj is None:
            raise ApiError.not_found(res.plural, name, res.group)
        return obj

    def iter(self, res: Resource, namespace: str | None) -> list[Obj]:
        tables = self.tables.get(res, {})
        if namespace is not None and res.namespaced:
            return list(tables.get(namespace, {}).values())
        return [o for t in tables.values() for o in t.values()]

    def list(self, res: Resource, namespace: str | None, label_selector: str | None = None,
             field_selector: str | None = None, limit: int | None = None,
             continue_token: str | None = None) -> tuple[list[Obj], str | None, int | None]:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, res.field_selectors)
        start = ""
        if continue_token:
            try:
                start = orjson.loads(base64.urlsafe_b64decode(continue_token.encode()))["start"]
            except (ValueError, KeyError, TypeError):
                raise ApiError.bad_request("continue key is not valid: malformed token") from None
        items = []
        for obj in self.iter(res, namespace):
            meta = obj["metadata"]
            if labels(meta.get("labels") or {}) and fields(obj):
                items.append((f"{meta.get('namespace', '')}/{meta['name']}", obj))
        items.sort(key=lambda kv: kv[0])
        if start:
            items = [kv for kv in items if kv[0] > start]
        token, remaining = None, None
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            token = base64.urlsafe_b64encode(orjson.dumps({"rv": self.rv, "start": items[-1][0]})).decode()
        return [o for _k, o in items], token, remaining

    # ---- write plumbing -----------------------------------------------------------------
    def _commit(self, kind: str, res: Resource, namespace: str, obj: Obj, old: Obj | None) -> WatchEvent:
        self.rv += 1
        self.writes += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        ev = WatchEvent(self.rv, kind, res, namespace, obj, old)
        self.history.append(ev)
        if len(self.history) > 2 * self.history_cap:
            drop = len(self.history) - self.history_cap
            del self.history[:drop]
            self.history_base += drop
        for w in self.watchers.get(res, ()):
            line = w.translate(ev)
            if line is not None:
                w.queue.put_nowait(line)
        ev._lines = {}  # serialized once per live fan-out; the history keeps only the object
        for listener in list(self.listeners):
            try:
                listener(ev)
            except Exception:  # a listener bug must not break the API
                log.exception("store listener failed")
        return ev

    def _index(self, key: Key, obj: Obj, old: Obj | None) -> None:
        uid = obj["metadata"]["uid"]
        self.by_uid[uid] = key
        old_owners = {r.get("uid") for r in ((old or {}).get("metadata", {}).get("ownerReferences") or [])}
        new_owners = {r.get("uid") for r in (obj["metadata"].get("ownerReferences") or [])}
        for o in old_owners - new_owners:
            self.dependents.get(o, set()).discard(key)
        for o in new_owners - old_owners:
            self.dependents.setdefault(o, set()).add(key)

    def _store(self, kind: str, res: Resource, namespace: str, obj: Obj, old: Obj | None) -> Obj:
        ns = namespace if res.namespaced else ""
        self.table(res, ns)[obj["metadata"]["name"]] = obj
        self._index((res, ns, obj["metadata"]["name"]), obj, old)
        self._commit(kind, res, ns, obj, old)
        return obj

    # ---- create / update ----------------------------------------------------------------
    def create(self, res: Resource, namespace: str, body: Obj, *, dry_run: bool = False) -> Obj:
        if not isinstance(body, dict):
            raise ApiError.bad_request("the body of the request was not a JSON object")
        obj = clone(body)
        if obj.get("kind") and obj["kind"] != res.kind:
            raise ApiError.bad_request(f"the API version in the data ({obj.get('apiVersion')}) does not match the "
                                       f"expected API version ({res.api_version})" if obj.get("apiVersion") !=
                                       res.api_version else f"{obj['kind']} in body does not match {res.kind}")
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError.bad_request("the namespace of the provided object does not match the namespace "
                                           "sent on the request")
            ns_obj = self.peek(NAMESPACES, "", namespace)
            if ns_obj is None:
                raise ApiError.not_found("namespaces", namespace)
            if ns_obj["status"].get("phase") == "Terminating":
                raise ApiError.forbidden(f'{res.plural} "{meta.get("name") or meta.get("generateName", "")}" is '
                                         f"forbidden: unable to create new content in namespace {namespace} "
                                         "because it is being terminated")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + name_suffix()
        default_and_validate(res, obj)
        ns = namespace if res.namespaced else ""
        if meta["name"] in self.table(res, ns):
            raise ApiError.already_exists(res.plural, meta["name"], res.group)
        if res is PODS:
            sa = obj["spec"]["serviceAccountName"]
            if self.peek(SERVICEACCOUNTS, ns, sa) is None:
                raise ApiError.forbidden(f'pods "{meta["name"]}" is forbidden: error looking up service account '
                                         f'{ns}/{sa}: serviceaccount "{sa}" not found')
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(key, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_iso()
        if "spec" in obj:
            meta["generation"] = 1
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        if dry_run:
            return obj
        self._store("ADDED", res, ns, obj, None)
        if res is NAMESPACES:
            self.create(SERVICEACCOUNTS, meta["name"], {"metadata": {"name": "default"}})
        owners = [r.get("uid") for r in meta.get("ownerReferences") or []]
        if owners and all(o not in self.by_uid for o in owners):
            # The garbage collector deletes a dependent whose owners are all absent.
            asyncio.get_running_loop().call_soon(self._gc_delete, (res, ns, meta["name"]), meta["uid"])
        return obj

    def _merge_update(self, res: Resource, old: Obj, new: Obj, subresource: str | None) -> Obj:
        meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
        if meta.get("name") and meta["name"] != old_meta["name"]:
            raise ApiError.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                       f"({old_meta['name']})")
        if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta["resourceVersion"]:
            raise ApiError.conflict(res.plural, old_meta["name"], res.group)
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise ApiError.conflict(res.plural, old_meta["name"], res.group)
        for key in ("name", "uid", "creationTimestamp", "namespace", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "generateName", "generation"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        new["kind"], new["apiVersion"] = res.kind, res.api_version
        if res.plural in STATUS_SUBRESOURCE:
            if subresource == "status":
                status = new.get("status")
                new = clone(old)
                new["status"] = status if status is not None else {}
            else:
                new["status"] = old.get("status", {})
                if res is PODS:
                    check_pod_update(old, new)
        causes = check_metadata(new, res)
        if res.plural == "secrets":
            causes += check_secret(new)
        elif res.plural == "configmaps":
            causes += check_keys(new, "data", "binaryData")
        if causes:
            raise ApiError.invalid(res.kind, old_meta["name"], causes, res.group)
        if "spec" in new and new.get("spec") != old.get("spec"):
            meta["generation"] = old_meta.get("generation", 1) + 1
        return new

    def replace(self, res: Resource, namespace: str, name: str, body: Obj, *, subresource: str | None = None,
                dry_run: bool = False) -> Obj:
        old = self.get(res, namespace, name)
        new = self._merge_update(res, old, clone(body), subresource)
        return self._finish_update(res, namespace, old, new, dry_run)

    def patch(self, res: Resource, namespace: str, name: str, content_type: str, body: Any, *,
              subresource: str | None = None, dry_run: bool = False) -> Obj:
        from testkit.fakes.kubernetes.patch import apply_patch

        old = self.get(res, namespace, name)
        patched = apply_patch(content_type, clone(old), body)
        if not isinstance(patched, dict):
            raise ApiError.bad_request("the patched object is not a JSON object")
        new = self._merge_update(res, old, patched, subresource)
        return self._finish_update(res, namespace, old, new, dry_run)

    def _finish_update(self, res: Resource, namespace: str, old: Obj, new: Obj, dry_run: bool) -> Obj:
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old or dry_run:
            return old if new == old else new
        obj = self._store("MODIFIED", res, namespace, new, old)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._awaits_kubelet(res, obj):
            self._remove(res, namespace, meta["name"])
        return obj

    def mutate(self, res: Resource, namespace: str, name: str, fn: Callable[[Obj], None]) -> Obj | None:
        """Internal writers (kubelet, scheduler, controllers): ``fn`` edits a copy in place."""
        old = self.peek(res, namespace, name)
        if old is None:
            return None
        new = clone(old)
        fn(new)
        if new == old:
            return old
        return self._store("MODIFIED", res, namespace, new, old)

    # ---- delete ---------------------------------------------------------------------------
    @staticmethod
    def _awaits_kubelet(res: Resource, obj: Obj) -> bool:
        """A pod bound to a node and not finished is removed by its kubelet, not the API."""
        return (res is PODS and bool(obj["spec"].get("nodeName"))
                and obj["status"].get("phase") not in TERMINAL
                and obj["metadata"].get("deletionGracePeriodSeconds", 0) > 0)

    def delete(self, res: Resource, namespace: str, name: str, *, grace: int | None = None,
               propagation: str | None = None, preconditions: dict[str, Any] | None = None,
               dry_run: bool = False) -> Obj:
        """Returns the object (pods, namespaces, graceful deletes) or a success Status."""
        old = self.get(res, namespace, name)
        meta = old["metadata"]
        pre = preconditions or {}
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise ApiError.conflict(res.plural, name, res.group)
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise ApiError.conflict(res.plural, name, res.group)
        if dry_run:
            return old
        propagation = propagation or "Background"
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise ApiError.bad_request(f"propagationPolicy {propagation!r} is not supported")
        if propagation == "Orphan":
            for dep in list(self.dependents.pop(meta["uid"], set())):
                self.mutate(dep[0], dep[1], dep[2], lambda o, u=meta["uid"]: o["metadata"].__setitem__(
                    "ownerReferences", [r for r in o["metadata"].get("ownerReferences", []) if r.get("uid") != u]))
        if meta.get("deletionTimestamp"):
            if res is PODS and grace == 0:
                return self._remove(res, namespace, name)
            return old
        if propagation == "Foreground" and self.dependents.get(meta["uid"]):
            obj = self.mutate(res, namespace, name, lambda o: o["metadata"].update(
                deletionTimestamp=now_iso(), deletionGracePeriodSeconds=0,
                finalizers=[*o["metadata"].get("finalizers", []), "foregroundDeletion"]))
            self._delete_dependents(meta["uid"])
            return obj or old
        if meta.get("finalizers"):
            return self.mutate(res, namespace, name, lambda o: o["metadata"].update(
                deletionTimestamp=now_iso(), deletionGracePeriodSeconds=0)) or old
        if res is NAMESPACES:
            obj = self.mutate(res, namespace, name, lambda o: (
                o["metadata"].update(deletionTimestamp=now_iso(), deletionGracePeriodSeconds=0),
                o["status"].update(phase="Terminating")))
            asyncio.get_running_loop().create_task(self._teardown_namespace(name))
            return obj or old
        if res is PODS:
            g = old["spec"].get("terminationGracePeriodSeconds", 30) if grace is None else grace
            if g > 0 and old["spec"].get("nodeName") and old["status"].get("phase") not in TERMINAL:
                return self.mutate(res, namespace, name, lambda o: o["metadata"].update(
                    deletionTimestamp=now_iso(time.time() + g), deletionGracePeriodSeconds=g)) or old
            return self._remove(res, namespace, name)
        self._remove(res, namespace, name)
        return success_status(name, res.group, res.plural, meta["uid"])

    def delete_collection(self, res: Resource, namespace: str | None, label_selector: str | None,
                          field_selector: str | None, *, grace: int | None = None,
                          propagation: str | None = None) -> list[Obj]:
        items, _, _ = self.list(res, namespace, label_selector, field_selector)
        out = []
        for obj in items:
            meta = obj["metadata"]
            try:
                out.append(self.delete(res, meta.get("namespace", ""), meta["name"], grace=grace,
                                       propagation=propagation))
            except ApiError:
                continue
        return out

    def remove(self, res: Resource, namespace: str, name: str) -> Obj | None:
        """Internal final removal (kubelet confirms a pod's termination)."""
        if self.peek(res, namespace, name) is None:
            return None
        return self._remove(res, namespace, name)

    def _remove(self, res: Resource, namespace: str, name: str) -> Obj:
        ns = namespace if res.namespaced else ""
        old = self.table(res, ns).pop(name)
        obj = clone(old)
        uid = obj["metadata"]["uid"]
        self.by_uid.pop(uid, None)
        for ref in obj["metadata"].get("ownerReferences") or []:
            deps = self.dependents.get(ref.get("uid"))
            if deps is not None:
                deps.discard((res, ns, name))
        self._commit("DELETED", res, ns, obj, old)
        self._delete_dependents(uid)
        for ref in obj["metadata"].get("ownerReferences") or []:
            self._maybe_finish_foreground(ref.get("uid"))
        return obj

    def _delete_dependents(self, uid: str) -> None:
        for dep in sorted(self.dependents.get(uid, set()), key=lambda k: (k[0].plural, k[1], k[2])):
            self._gc_delete(dep, None, ignore_owner=uid)
        if not self.dependents.get(uid):
            self.dependents.pop(uid, None)

    def _gc_delete(self, key: Key, expect_uid: str | None, ignore_owner: str | None = None) -> None:
        """Delete a dependent unless another of its owners still exists (as the real GC)."""
        res, ns, name = key
        obj = self.peek(res, ns, name)
        if obj is None or (expect_uid and obj["metadata"]["uid"] != expect_uid):
            return
        owners = [r.get("uid") for r in obj["metadata"].get("ownerReferences") or []]
        if any(o in self.by_uid and o != ignore_owner for o in owners):
            return
        try:
            self.delete(res, ns, name)
        except ApiError:
            pass

    def _maybe_finish_foreground(self, owner_uid: str | None) -> None:
        key = self.by_uid.get(owner_uid or "")
        if key is None or self.dependents.get(owner_uid or ""):
            return
        owner = self.peek(*key)
        if owner and "foregroundDeletion" in (owner["metadata"].get("finalizers") or []):
            self.mutate(*key, lambda o: o["metadata"].__setitem__(
                "finalizers", [f for f in o["metadata"]["finalizers"] if f != "foregroundDeletion"]))
            owner = self.peek(*key)
            if owner and not owner["metadata"].get("finalizers"):
                self._remove(*key)

    async def _teardown_namespace(self, name: str) -> None:
        """The namespace controller: delete everything inside, wait for pods, then the namespace."""
        for res, tables in list(self.tables.items()):
            if res.namespaced and res is not PODS:
                for obj_name in list(tables.get(name, {})):
                    if self.peek(res, name, obj_name) is not None:
                        self._remove(res, name, obj_name)
        for obj_name in list(self.tables.get(PODS, {}).get(name, {})):
            try:
                self.delete(PODS, name, obj_name)
            except ApiError:
                pass
        while self.tables.get(PODS, {}).get(name):
            await asyncio.sleep(0.02)
        if self.peek(NAMESPACES, "", name) is not None:
            self._remove(NAMESPACES, "", name)

    # ---- watch ----------------------------------------------------------------------------
    def watch(self, res: Resource, namespace: str | None, label_selector: str | None,
              field_selector: str | None, resource_version: str | None) -> Watcher:
        """Register a watcher; its queue is pre-filled with the initial events. Raises a 410
        ApiError when ``resource_version`` is older than the kept history."""
        w = Watcher(res, namespace if res.namespaced else None, parse_label_selector(label_selector),
                    parse_field_selector(field_selector, res.field_selectors))
        if resource_version in (None, "", "0"):
            for obj in sorted(self.iter(res, w.namespace), key=lambda o: int(o["metadata"]["resourceVersion"])):
                if w.matches(obj):
                    w.queue.put_nowait(orjson.dumps({"type": "ADDED", "object": obj}) + b"\n")
        else:
            try:
                since = int(resource_version)
            except ValueError:
                raise ApiError.bad_request(f"invalid resource version: {resource_version!r}") from None
            if since < self.history_base - 1:
                raise ApiError.gone(f"too old resource version: {since} ({self.history_base - 1})")
            for ev in self.history[max(0, since + 1 - self.history_base):]:
                if ev.res is res:
                    line = w.translate(ev)
                    if line is not None:
                        w.queue.put_nowait(line)
        self.watchers.setdefault(res, []).append(w)
        return w

    def unwatch(self, w: Watcher) -> None:
        lst = self.watchers.get(w.res, [])
        if w in lst:
            lst.remove(w)
