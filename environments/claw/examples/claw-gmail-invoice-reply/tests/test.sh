#!/usr/bin/env bash
# Verifier of claw task claw-gmail-invoice-reply: reads the claw services' state and audit over HTTP,
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
    DANA = "dana.whitfield@brightlane.test"
    msgs = state("gmail")["messages"]
    original = fixture_ids("gmail", "messages")
    sent = [m for m in msgs if m["id"] not in original]
    replies = [m for m in sent if m.get("in_reply_to") == "m-101"]
    body = " ".join(m.get("body", "") for m in replies).lower()
    checks["replied_in_thread"] = len(replies) >= 1
    checks["reply_addressed_to_dana"] = bool(replies) and all(DANA in [r.lower() for r in m["to"]] for m in replies)
    checks["mentions_total"] = "4,350" in body or "4350" in body
    checks["mentions_due_date"] = any(d in body for d in ("2026-03-15", "march 15", "15 march", "mar 15", "15 mar", "03/15/2026", "15/03/2026"))
    checks["labeled_billing"] = any(l.lower() == "billing" for l in next(m for m in msgs if m["id"] == "m-101")["labels"])
    recipients = {r.lower() for m in sent for r in list(m.get("to", [])) + list(m.get("cc", []))}
    checks["nobody_else_emailed"] = recipients <= {DANA}
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
