#!/usr/bin/env bash
# Verifier of claw task claw-web-release-todo: reads the claw services' state and audit over HTTP,
# scores the checks and writes ${LOGS_DIR:-/logs}/verifier/reward.txt and reward.json.
# Reward 1.0 only if every check passes; services unreachable -> 0.0.
set -u
python3 - <<'PYEOF'
import json, os, urllib.request

URL = (os.environ.get("CLAW_URL") or "http://127.0.0.1:" + (os.environ.get("PORT") or "8790")).rstrip("/")
OUT = os.path.join(os.environ.get("LOGS_DIR") or "/logs", "verifier")
WORKSPACE = os.environ.get("WORKSPACE") or "/app"


def get(path):
    with urllib.request.urlopen(URL + path, timeout=10) as resp:
        return json.load(resp)


def state(service):
    return get("/" + service + "/state")["state"]


def audit(service):
    return get("/" + service + "/audit")["events"]


def changes(service, collection=None):
    return [e for e in audit(service) if e["kind"] == "change" and collection in (None, e["collection"])]


def fixture_ids(service, collection):
    """Ids present before the agent ran (objects not created by a change event)."""
    created = {e["id"] for e in changes(service, collection) if e["op"] == "create"}
    return {o["id"] for o in state(service)[collection]} - created


checks = {}
error = None
try:
    answer_file = os.path.join(WORKSPACE, "answer.txt")
    answer = open(answer_file).read().strip() if os.path.exists(answer_file) else ""
    checks["answer_file_has_ga_date"] = answer == "2026-02-10"
    todos = [t for t in state("notes")["todos"] if t["id"] not in fixture_ids("notes", "todos")]
    upgrade = [t for t in todos if "4.2" in t.get("title", "") and "upgrade" in t.get("title", "").lower()]
    checks["one_upgrade_todo"] = len(upgrade) == 1
    checks["todo_due_14_days_after_ga"] = bool(upgrade) and upgrade[0].get("due") == "2026-02-24"
    checks["no_other_todos"] = len(todos) == len(upgrade)
except Exception as exc:  # services down or unexpected state: the task failed
    error = type(exc).__name__ + ": " + str(exc)
checks = {name: bool(ok) for name, ok in checks.items()}
reward = 1.0 if checks and error is None and all(checks.values()) else 0.0
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "reward.txt"), "w") as f:
    f.write(str(reward) + "\n")
metrics = {"reward": reward}
metrics.update({"check." + name: int(ok) for name, ok in checks.items()})
with open(os.path.join(OUT, "reward.json"), "w") as f:
    json.dump(metrics, f, indent=2)
detail = {"reward": reward, "checks": checks, "error": error}
with open(os.path.join(OUT, "checks.json"), "w") as f:
    json.dump(detail, f, indent=2)
print(json.dumps(detail))
PYEOF
