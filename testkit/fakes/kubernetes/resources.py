"""The resource types the fake serves (group, version, plural, kind, scope) and the
discovery documents (/api, /apis, /api/v1, /apis/<g>/<v>) the clients read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVER_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-openforge-fake", "gitCommit": "fake",
                  "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22",
                  "compiler": "gc", "platform": "linux/amd64"}


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    field_selectors: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


POD_FIELDS = frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                        "status.phase", "status.podIP", "status.nominatedNodeName"})
EVENT_FIELDS = frozenset({"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                          "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                          "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"})

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "pods", "Pod", short=("po",), subresources=("status", "log", "eviction"),
             field_selectors=POD_FIELDS),
    Resource("", "v1", "namespaces", "Namespace", namespaced=False, short=("ns",), subresources=("status",),
             field_selectors=frozenset({"status.phase"})),
    Resource("", "v1", "nodes", "Node", namespaced=False, short=("no",), subresources=("status",),
             field_selectors=frozenset({"spec.unschedulable"})),
    Resource("", "v1", "secrets", "Secret", field_selectors=frozenset({"type"})),
    Resource("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    Resource("", "v1", "events", "Event", short=("ev",), field_selectors=EVENT_FIELDS),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    Resource("", "v1", "services", "Service", short=("svc",)),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=("netpol",)),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
)

BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES}

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    items: list[dict[str, Any]] = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        items.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                      "kind": r.kind, "verbs": _VERBS, "shortNames": list(r.short)})
        for sub in r.subresources:
            verbs = {"log": ["get"], "eviction": ["create"]}.get(sub, ["get", "patch", "update"])
            kind = {"log": "Pod", "eviction": "Eviction"}.get(sub, r.kind)
            items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                          "kind": kind, "verbs": verbs})
    if not items:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version,
            "resources": items}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_group_list() -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
         "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}} for g, vs in groups.items()]}


def api_group(group: str) -> dict[str, Any] | None:
    for g in api_group_list()["groups"]:
        if g["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **g}
    return None
