"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
patch (merge patch whose lists of named items — containers, env, volumes, ... — merge by
``name``; ``$patch: delete`` removes an item)."""

from __future__ import annotations

import copy
from typing import Any

from testkit.fakes.kubernetes.status import ApiError

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _named_list(items: Any) -> bool:
    return isinstance(items, list) and bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if isinstance(patch, list):
        if _named_list(patch) and isinstance(target, list):
            out = [copy.deepcopy(t) for t in target]
            index = {item.get("name"): i for i, item in enumerate(out) if isinstance(item, dict)}
            for item in patch:
                name = item["name"]
                if item.get("$patch") == "delete":
                    out = [o for o in out if not (isinstance(o, dict) and o.get("name") == name)]
                    index = {o.get("name"): i for i, o in enumerate(out) if isinstance(o, dict)}
                elif name in index:
                    out[index[name]] = strategic_merge_patch(out[index[name]], item)
                else:
                    index[name] = len(out)
                    out.append(copy.deepcopy(item))
            return out
        return copy.deepcopy(patch)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = strategic_merge_patch(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: "
                       f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise ApiError.bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        try:
            if kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                                   f"request: testing value {op.get('path')} failed")
                continue
            if kind in ("move", "copy"):
                src_parts = _pointer(op.get("from", ""))
                value = copy.deepcopy(_walk(doc, src_parts))
                if kind == "move":
                    parent = _walk(doc, src_parts[:-1])
                    del parent[int(src_parts[-1]) if isinstance(parent, list) else src_parts[-1]]
                kind, op = "add", {"value": value}
            if not parts:
                doc = copy.deepcopy(op.get("value"))
                continue
            parent = _walk(doc, parts[:-1])
            last = parts[-1]
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
                else:
                    parent[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(op["value"])
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = copy.deepcopy(op["value"])
            else:
                raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: "
                               f"unexpected kind of operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: "
                           f"{kind} operation does not apply: doc is missing path: {op.get('path')!r}") from None
    return doc


def apply_patch(content_type: str, target: dict[str, Any], body: Any) -> dict[str, Any]:
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == JSON_PATCH:
        return json_patch(target, body)
    if ctype == MERGE:
        return merge_patch(target, body)
    if ctype == STRATEGIC:
        return strategic_merge_patch(target, body)
    raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted "
                   f"media types include: {JSON_PATCH}, {MERGE}, {STRATEGIC}")
