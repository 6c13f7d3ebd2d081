"""Defaulting and validation of incoming objects, with the API server's 422 field errors.

Covers what a rollout backend can get wrong: names (RFC 1123), labels, pod specs (containers,
images, restartPolicy, activeDeadlineSeconds, requests above limits, pod-spec immutability),
secrets (base64 data, ``stringData``), network policies (defaults).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from testkit.fakes.kubernetes.quantity import parse_quantity
from testkit.fakes.kubernetes.resources import Resource
from testkit.fakes.kubernetes.status import ApiError

Cause = tuple[str, str, str]  # (field, reason, message)

_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                  "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                  "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
#: Pod spec fields a PUT/PATCH may change (the rest is immutable once created).
MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def _invalid(value: Any, msg: str) -> str:
    return f'Invalid value: "{value}": {msg}' if isinstance(value, str) else f"Invalid value: {value}: {msg}"


def check_name(name: str, field: str, *, label: bool = False) -> list[Cause]:
    if label:
        if len(name) > 63 or not _LABEL_RE.match(name):
            return [(field, "FieldValueInvalid", _invalid(name, _LABEL_MSG if len(name) <= 63 else
                                                           "must be no more than 63 characters"))]
    elif len(name) > 253 or not _SUBDOMAIN_RE.match(name):
        return [(field, "FieldValueInvalid", _invalid(name, _SUBDOMAIN_MSG if len(name) <= 253 else
                                                       "must be no more than 253 characters"))]
    return []


def check_metadata(obj: dict[str, Any], res: Resource) -> list[Cause]:
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        causes.append(("metadata.name", "FieldValueRequired", "Required value: name or generateName is required"))
    elif name:
        causes += check_name(name, "metadata.name", label=res.plural == "namespaces")
    for key, value in (meta.get("labels") or {}).items():
        key_name = key.rsplit("/", 1)[-1]
        if not key_name or len(key_name) > 63 or not _QUALIFIED_NAME_RE.match(key_name):
            causes.append(("metadata.labels", "FieldValueInvalid", _invalid(key, "name part must be a valid "
                                                                            "qualified name")))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE_RE.match(value):
            causes.append(("metadata.labels", "FieldValueInvalid", _invalid(value, "a valid label must be an empty "
                           "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                           "with an alphanumeric character (max 63 characters)")))
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                causes.append((f"metadata.ownerReferences[{i}].{key}", "FieldValueRequired", "Required value"))
    return causes


def _qos(containers: list[dict[str, Any]]) -> str:
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and parse_quantity(req[r]) != parse_quantity(lim[r])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("tolerations", [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}])
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        image = str(c.get("image") or "")
        tag = image.rsplit("/", 1)[-1]
        c.setdefault("imagePullPolicy", "Always" if ("@" not in tag and (":" not in tag or tag.endswith(":latest")))
                     else "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        res = c.setdefault("resources", {})
        if res.get("limits") and not res.get("requests"):
            res["requests"] = dict(res["limits"])
        elif res.get("limits"):
            for key, value in res["limits"].items():
                res["requests"].setdefault(key, value)
    try:
        qos = _qos(spec.get("containers") or [])
    except ValueError:
        qos = "BestEffort"
    pod["status"] = {"phase": "Pending", "qosClass": qos}


def check_pod_spec(pod: dict[str, Any]) -> list[Cause]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        causes.append(("spec.containers", "FieldValueRequired", "Required value"))
    seen: set[str] = set()
    listed = [("initContainers", i, c) for i, c in enumerate(spec.get("initContainers") or [])]
    listed += [("containers", i, c) for i, c in enumerate(containers or [])]
    for group, i, c in listed:
        path = f"spec.{group}[{i}]"
        name = c.get("name")
        if not name:
            causes.append((f"{path}.name", "FieldValueRequired", "Required value"))
        else:
            causes += check_name(name, f"{path}.name", label=True)
            if name in seen:
                causes.append((f"{path}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
            seen.add(name)
        if not c.get("image"):
            causes.append((f"{path}.image", "FieldValueRequired", "Required value"))
        for j, env in enumerate(c.get("env") or []):
            if not env.get("name"):
                causes.append((f"{path}.env[{j}].name", "FieldValueRequired", "Required value"))
        res = c.get("resources") or {}
        parsed: dict[str, dict[str, Any]] = {}
        for kind in ("requests", "limits"):
            for key, value in (res.get(kind) or {}).items():
                try:
                    parsed.setdefault(kind, {})[key] = parse_quantity(value)
                except ValueError as exc:
                    causes.append((f"{path}.resources.{kind}[{key}]", "FieldValueInvalid", str(exc)))
        for key, req in parsed.get("requests", {}).items():
            lim = parsed.get("limits", {}).get(key)
            if lim is not None and req > lim:
                message = (f'Invalid value: "{res["requests"][key]}": must be less than or equal to {key} '
                           f"limit of {res['limits'][key]}")
                causes.append((f"{path}.resources.requests", "FieldValueInvalid", message))
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        causes.append(("spec.restartPolicy", "FieldValueNotSupported",
                       f'Unsupported value: "{policy}": supported values: "Always", "OnFailure", "Never"'))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not isinstance(deadline, int) or not 1 <= deadline <= 2147483647):
        causes.append(("spec.activeDeadlineSeconds", "FieldValueInvalid",
                       f"Invalid value: {deadline}: must be between 1 and 2147483647, inclusive"))
    return causes


_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def check_keys(obj: dict[str, Any], *fields: str) -> list[Cause]:
    """Secret/ConfigMap keys: ``[-._a-zA-Z0-9]+``, at most 253 characters."""
    causes: list[Cause] = []
    for f in fields:
        for key in obj.get(f) or {}:
            if len(key) > 253 or not _CONFIG_KEY_RE.match(key):
                message = (f'Invalid value: "{key}": a valid config key must consist of alphanumeric characters, '
                           "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                           "validation is '[-._a-zA-Z0-9]+')")
                causes.append((f"{f}[{key}]", "FieldValueInvalid", message))
    return causes


def check_secret(obj: dict[str, Any]) -> list[Cause]:
    causes = check_keys(obj, "data", "stringData")
    data = obj.setdefault("data", {}) if ("data" in obj or "stringData" in obj) else None
    for key, value in (obj.get("data") or {}).items():
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            causes.append((f"data[{key}]", "FieldValueInvalid", "Invalid value: illegal base64 data"))
    for key, value in (obj.pop("stringData", None) or {}).items():
        assert data is not None
        data[key] = base64.b64encode(str(value).encode()).decode()
    obj.setdefault("type", "Opaque")
    return causes


def default_and_validate(res: Resource, obj: dict[str, Any]) -> None:
    """Default ``obj`` in place for a create; raise 422 ApiError listing every problem."""
    causes = check_metadata(obj, res)
    if res.plural == "pods":
        causes += check_pod_spec(obj)
        if not causes:
            try:
                default_pod(obj)
            except ValueError as exc:  # pragma: no cover - quantities were checked
                causes.append(("spec", "FieldValueInvalid", str(exc)))
    elif res.plural == "secrets":
        causes += check_secret(obj)
    elif res.plural == "configmaps":
        causes += check_keys(obj, "data", "binaryData")
    elif res.plural == "namespaces":
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        obj["status"] = {"phase": "Active"}
    elif res.plural == "networkpolicies":
        spec = obj.setdefault("spec", {})
        spec.setdefault("podSelector", {})
        spec.setdefault("policyTypes", ["Ingress", *(["Egress"] if "egress" in spec else [])])
        for t in spec["policyTypes"]:
            if t not in ("Ingress", "Egress"):
                causes.append(("spec.policyTypes", "FieldValueNotSupported",
                               f'Unsupported value: "{t}": supported values: "Ingress", "Egress"'))
    elif res.plural == "events" and not obj.get("involvedObject"):
        causes.append(("involvedObject", "FieldValueRequired", "Required value"))
    if causes:
        meta = obj.get("metadata") or {}
        raise ApiError.invalid(res.kind, meta.get("name") or meta.get("generateName") or "", causes, res.group)


def check_pod_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A pod's spec is immutable but for a few fields (422 Forbidden as on a real server)."""
    def strip(spec: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in MUTABLE_POD_SPEC}
        for group in ("initContainers", "containers"):
            if group in spec:
                out[group] = [{k: v for k, v in c.items() if k != "image"} for c in spec[group]]
        return out

    if strip(old.get("spec") or {}) != strip(new.get("spec") or {}):
        name = old["metadata"]["name"]
        message = ("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                   "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                   "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                   "(allow it to be set to 1 if it was previously negative)")
        raise ApiError.invalid("Pod", name, [("spec", "FieldValueForbidden", message)])
