#!/usr/bin/env bash
# Verifier of claw task claw-ticket-meeting-crm: reads the claw services' state and audit over HTTP,
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
    PRIYA = "priya.raman@quillworks.test"
    events = state("calendar")["events"]
    new_events = [e for e in events if e["id"] not in fixture_ids("calendar", "events")]
    meetings = [e for e in new_events if "t-1042" in e.get("title", "").lower()]
    checks["one_meeting_created"] = len(meetings) == 1
    m = meetings[0] if meetings else {}
    checks["meeting_at_earliest_free_slot"] = m.get("start") == "2026-03-04T10:30:00Z" and m.get("end") == "2026-03-04T11:00:00Z"
    checks["requester_invited"] = PRIYA in [a.lower() for a in m.get("attendees", [])]
    created = {e["id"] for e in changes("calendar", "events") if e["op"] == "create"}
    checks["existing_events_untouched"] = all(e["id"] in created for e in changes("calendar", "events"))
    acts = [a for a in state("crm")["activities"] if a["id"] not in fixture_ids("crm", "activities")]
    logged = [a for a in acts if a.get("account_id") == "ACC-7" and a.get("type") == "meeting" and "T-1042" in a.get("subject", "")]
    checks["crm_meeting_logged_on_quillworks"] = len(logged) >= 1
    checks["crm_contact_is_requester"] = any((a.get("contact_email") or "").lower() == PRIYA for a in logged)
    checks["no_activity_on_other_accounts"] = all(a.get("account_id") == "ACC-7" for a in acts)
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
