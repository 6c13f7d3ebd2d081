"""Building blocks for writing claw task dirs (used by the examples and by synthesis):
the ``environment/`` file map, a verifier ``tests/test.sh`` around a block of check code,
and an oracle ``solution/solve.sh`` from a list of tool calls.

Pass the files to :func:`environments.taskdir.write_task` together with a TaskConfig whose
``metadata.services`` lists the services (the runner starts them from there).
"""

from __future__ import annotations

import json
import shlex
import textwrap
from typing import Any

from environments.claw.docker import dockerfile_for
from environments.claw.services import get_spec, parse_services
from environments.claw.tools import tools_json_text

_HEADER = '''#!/usr/bin/env bash
# Verifier of claw task {task_id}: reads the claw services' state and audit over HTTP,
# scores the checks and writes ${{LOGS_DIR:-/logs}}/verifier/reward.txt and reward.json.
# Reward 1.0 only if every check passes; services unreachable -> 0.0.
set -u
python3 - <<'PYEOF'
'''

#: The claw verifier's prelude (stdlib Python): the helpers a task's check code uses. The one
#: source: every ``tests/test.sh`` :func:`verifier_script` writes (the examples' builder uses
#: it) carries a copy, so a task dir stays self-contained (Harbor format);
#: tests/environments/claw/test_examples.py asserts each checked-in example's copy equals it.
PRELUDE = '''import json, os, urllib.request

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


'''

#: How every checks-based verifier (claw and browser tasks) ends: run the checks block, then
#: reward 1.0 only if every check passed and nothing raised; reward.txt, reward.json (numeric
#: only: ``reward`` and ``check.<name>`` 1/0) and checks.json (checks as booleans, error) in OUT.
_SCORED_CHECKS = '''checks = {}
error = None
try:
__BODY__
except Exception as exc:  # services down or unexpected state: the task failed
    error = type(exc).__name__ + ": " + str(exc)
checks = {name: bool(ok) for name, ok in checks.items()}
reward = 1.0 if checks and error is None and all(checks.values()) else 0.0
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "reward.txt"), "w") as f:
    f.write(str(reward) + "\\n")
metrics = {"reward": reward}
metrics.update({"check." + name: int(ok) for name, ok in checks.items()})
with open(os.path.join(OUT, "reward.json"), "w") as f:
    json.dump(metrics, f, indent=2)
detail = {"reward": reward, "checks": checks, "error": error}
with open(os.path.join(OUT, "checks.json"), "w") as f:
    json.dump(detail, f, indent=2)
print(json.dumps(detail))
'''


def scored_checks(body: str) -> str:
    """The verifier's Python tail around ``body`` (indented check code filling ``checks``;
    the script defines ``OUT``, ``os`` and ``json`` above it)."""
    return _SCORED_CHECKS.replace("__BODY__", body)


_ORACLE = '''#!/usr/bin/env bash
# Oracle of claw task {task_id}: performs the task through the claw tool-call CLI.
set -euo pipefail
claw() {{ python3 -m environments.claw.call "$@"; }}
{calls}
'''


def verifier_script(task_id: str, checks_code: str) -> str:
    """tests/test.sh running ``checks_code`` (Python; fills the dict ``checks`` with
    name → bool using ``state(svc)``, ``audit(svc)``, ``changes(svc, coll)``,
    ``fixture_ids(svc, coll)``, ``WORKSPACE``)."""
    body = textwrap.indent(textwrap.dedent(checks_code).strip() + "\n", "    ")
    return _HEADER.format(task_id=task_id) + PRELUDE + scored_checks(body.rstrip("\n")) + "PYEOF\n"


def oracle_script(task_id: str, calls: list[tuple[str, dict[str, Any]]], shell: list[str] | tuple[str, ...] = ()) -> str:
    """solution/solve.sh making the given tool calls in order (fails on the first error),
    then running the ``shell`` lines (e.g. writing a file under ``${WORKSPACE:-/app}``)."""
    lines = [f"claw {tool} {shlex.quote(json.dumps(args, ensure_ascii=False))}" for tool, args in calls]
    return _ORACLE.format(task_id=task_id, calls="\n".join([*lines, *shell]))


def environment_files(
    services: str | list[str],
    fixtures: dict[str, dict[str, Any]],
    harnesses: list[str] | tuple[str, ...] = (),
    tools: list[str] | None = None,
) -> dict[str, str]:
    """``environment/Dockerfile``, ``environment/tools.json``, ``environment/fixtures/<svc>.json``.

    ``tools`` limits tools.json to the named tools (default: every tool of the services).
    Fixtures are validated by loading them into the services (raises ``FixtureError``).
    """
    from environments.claw.core import AuditLog, FixtureError, Store  # noqa: PLC0415

    names = parse_services(services)
    unknown = set(fixtures) - set(names)
    if unknown:
        raise FixtureError(f"fixtures for services not in the task: {', '.join(sorted(unknown))}")
    files = {
        "environment/Dockerfile": dockerfile_for(names, harnesses),
        "environment/tools.json": tools_json_text(names, tools),
    }
    for name in names:
        data = fixtures.get(name, {})
        Store(get_spec(name), AuditLog(), data)
        files[f"environment/fixtures/{name}.json"] = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return files
