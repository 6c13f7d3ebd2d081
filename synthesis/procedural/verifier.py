"""Verifier scripts for generated claw tasks: a small check language rendered into test.sh.

A generated task's ``tests/test.sh`` is self-contained (stdlib Python only): it embeds the
task's checks as JSON and the interpreter below, reads the services' ``/state`` and
``/audit`` over HTTP, the agent's workspace and its final reply, and writes ``reward.txt``,
``reward.json`` (numeric only, as Harbor reads it: ``reward`` and ``check.<name>`` = 1/0) and
``checks.json`` (each check's outcome as a boolean). Scoring ``all``: 1.0 only when every check
passes; ``weighted``: Σ weight·passed / Σ weight (partial credit; ``weight`` defaults to 1).

Check kinds (``where`` maps a dotted field to ``{op: arg}``; ops: eq, ne, in, contains,
not_contains, all_contain, time_eq, num_eq, prefix):
- ``{"kind": "state", "service", "collection", "where", "count"? | "min"? | "max"?}``
- ``{"kind": "audit", "service", "where", "count"? | "min"? | "max"?}`` over audit events
- ``{"kind": "file", "path", "contains"?: [..], "number"?: x, "lines"?: [..]}`` (workspace)
- ``{"kind": "answer", "contains"?: [..], "any_of"?: [..], "excludes"?: [..]}``: the harness's
  final reply (``/logs/agent/final_answer.txt``) holds every ``contains`` string, one ``any_of``
  one and no ``excludes`` one
"""

from __future__ import annotations

import json
from typing import Any

VERIFIER_PY = r'''
import json, os, re, urllib.request
from datetime import datetime

CHECKS = json.loads(__CHECKS__)
SCORING = __SCORING__
LOGS = os.environ.get("LOGS_DIR", "/logs")
URL = (os.environ.get("CLAW_URL") or "http://127.0.0.1:" + os.environ.get("PORT", "8790")).rstrip("/")
WS = os.environ.get("WORKSPACE") or "/app"
_cache = {}

def get(path):
    if path not in _cache:
        with urllib.request.urlopen(URL + path, timeout=10) as resp:
            _cache[path] = json.load(resp)
    return _cache[path]

def norm(v):
    return v.strip().casefold() if isinstance(v, str) else v

def as_time(v):
    return datetime.fromisoformat(str(v).replace("Z", "+00:00"))

def text_of(x):
    return json.dumps(x, sort_keys=True) if isinstance(x, (dict, list)) else x

def contains(value, arg):
    if isinstance(value, (list, tuple)):
        return any(norm(x) == norm(arg) or (isinstance(arg, str) and isinstance(text_of(x), str) and norm(arg) in norm(text_of(x))) for x in value)
    if isinstance(value, str) and isinstance(arg, str):
        return norm(arg) in norm(value)
    return False

def match(value, cond):
    for op, arg in cond.items():
        if op == "eq":
            ok = norm(value) == norm(arg)
        elif op == "ne":
            ok = norm(value) != norm(arg)
        elif op == "in":
            ok = norm(value) in [norm(a) for a in arg]
        elif op == "contains":
            ok = contains(value, arg)
        elif op == "not_contains":
            ok = not contains(value, arg)
        elif op == "all_contain":
            ok = all(contains(value, a) for a in arg)
        elif op == "prefix":
            ok = isinstance(value, str) and norm(value).startswith(norm(arg))
        elif op == "time_eq":
            try:
                ok = as_time(value) == as_time(arg)
            except (TypeError, ValueError):
                ok = False
        elif op == "num_eq":
            try:
                ok = abs(float(value) - float(arg)) < 0.005
            except (TypeError, ValueError):
                ok = False
        else:
            ok = False
        if not ok:
            return False
    return True

def field(item, dotted):
    cur = item
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur

def counted(n, c):
    if "count" in c:
        return n == c["count"]
    return n >= c.get("min", 1) and ("max" not in c or n <= c["max"])

def numbers(text):
    return [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*\.?\d*", text)]

def run(c):
    kind = c["kind"]
    where = c.get("where", {})
    if kind == "state":
        items = get("/%s/state" % c["service"])["state"].get(c["collection"], [])
        return counted(sum(1 for i in items if all(match(field(i, f), w) for f, w in where.items())), c)
    if kind == "audit":
        events = get("/%s/audit" % c["service"])["events"]
        return counted(sum(1 for e in events if all(match(field(e, f), w) for f, w in where.items())), c)
    if kind == "file":
        path = os.path.join(WS, c["path"])
        if not os.path.isfile(path):
            return False
        text = open(path, encoding="utf-8", errors="replace").read()
        if not all(norm(s) in norm(text) for s in c.get("contains", [])):
            return False
        if "number" in c and not any(abs(x - float(c["number"])) < 0.005 for x in numbers(text)):
            return False
        if "lines" in c:
            got = [norm(l) for l in text.splitlines() if l.strip()]
            if got != [norm(l) for l in c["lines"]]:
                return False
        return True
    if kind == "answer":
        path = os.path.join(LOGS, "agent", "final_answer.txt")
        if not os.path.isfile(path):
            return False
        text = norm(open(path, encoding="utf-8", errors="replace").read())
        if not text or not all(norm(s) in text for s in c.get("contains", [])):
            return False
        if any(norm(s) in text for s in c.get("excludes", [])):
            return False
        return not c.get("any_of") or any(norm(s) in text for s in c["any_of"])
    return False

results = {}
for c in CHECKS:
    try:
        results[c["name"]] = bool(run(c))
    except Exception as exc:  # unreachable services, malformed state: the check fails
        results[c["name"]] = False
if SCORING == "weighted":
    total = sum(float(c.get("weight", 1.0)) for c in CHECKS)
    reward = round(sum(float(c.get("weight", 1.0)) for c in CHECKS if results[c["name"]]) / total, 6) if total else 0.0
else:
    reward = 1.0 if results and all(results.values()) else 0.0
out = os.path.join(LOGS, "verifier")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "reward.txt"), "w") as fh:
    fh.write("%s\n" % reward)
metrics = {"reward": reward}
metrics.update({"check." + name: int(ok) for name, ok in results.items()})
with open(os.path.join(out, "reward.json"), "w") as fh:
    json.dump(metrics, fh, indent=1)
with open(os.path.join(out, "checks.json"), "w") as fh:
    json.dump({"reward": reward, "checks": results}, fh, indent=1)
print(json.dumps({"reward": reward, "checks": results}))
'''


def render_test_sh(checks: list[dict[str, Any]], scoring: str = "all") -> str:
    """A self-contained ``tests/test.sh`` evaluating ``checks`` (``scoring``: all | weighted)."""
    names = [c["name"] for c in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"verifier checks: duplicate names in {names}")
    if scoring not in ("all", "weighted"):
        raise ValueError(f"verifier scoring: {scoring!r} is not 'all' or 'weighted'")
    if scoring == "weighted" and not any(float(c.get("weight", 1.0)) > 0 for c in checks):
        raise ValueError("verifier checks: weighted scoring needs a check with a positive weight")
    payload = json.dumps(json.dumps(checks, indent=1, sort_keys=True))
    body = VERIFIER_PY.replace("__CHECKS__", payload).replace("__SCORING__", json.dumps(scoring))
    return "#!/usr/bin/env bash\n# Generated verifier: checks the claw services' state/audit and the workspace.\nset -u\npython3 - <<'PYEOF'\n" + body.strip() + "\nPYEOF\n"
