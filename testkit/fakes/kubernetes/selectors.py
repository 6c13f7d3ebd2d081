"""Label and field selectors as the API server parses them (equality and set-based)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from testkit.fakes.kubernetes.status import ApiError

Matcher = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!)?\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str | None) -> Callable[[dict[str, str]], bool]:
    """A predicate over a labels dict; raises a 400 ApiError on bad syntax."""
    if not text:
        return lambda labels: True
    tests: list[Callable[[dict[str, str]], bool]] = []
    for term in _split_top(text):
        for op in ("!=", "==", "="):
            if op in term and "(" not in term:
                key, value = (s.strip() for s in term.split(op, 1))
                if not key:
                    raise ApiError.bad_request(f"unable to parse requirement: invalid label key {term!r}")
                if op == "!=":
                    tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
                else:
                    tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
                break
        else:
            m = _SET_RE.match(term)
            if not m:
                raise ApiError.bad_request(f"unable to parse requirement: {term!r}")
            negate, key, op, values = m.groups()
            if op:
                if negate:
                    raise ApiError.bad_request(f"unable to parse requirement: {term!r}")
                vals = {v.strip() for v in values.split(",") if v.strip()}
                if op == "in":
                    tests.append(lambda labels, k=key, vs=vals: labels.get(k) in vs)
                else:
                    tests.append(lambda labels, k=key, vs=vals: labels.get(k) not in vs)
            elif negate:
                tests.append(lambda labels, k=key: k not in labels)
            else:
                tests.append(lambda labels, k=key: k in labels)
    return lambda labels: all(t(labels) for t in tests)


def _field(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str | None, allowed: frozenset[str]) -> Matcher:
    """A predicate over a whole object; only fields in ``allowed`` (plus metadata.name /
    metadata.namespace) may be selected, as on a real server (400 otherwise)."""
    if not text:
        return lambda obj: True
    tests: list[Matcher] = []
    for term in _split_top(text):
        for op in ("!=", "==", "="):
            if op in term:
                key, value = (s.strip() for s in term.split(op, 1))
                break
        else:
            raise ApiError.bad_request(f"invalid selector: {text!r}; can't understand {term!r}")
        if key not in allowed and key not in ("metadata.name", "metadata.namespace"):
            raise ApiError.bad_request(f"field label not supported: {key}")
        if op == "!=":
            tests.append(lambda obj, k=key, v=value: _field(obj, k) != v)
        else:
            tests.append(lambda obj, k=key, v=value: _field(obj, k) == v)
    return lambda obj: all(t(obj) for t in tests)
