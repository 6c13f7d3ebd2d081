"""Task-directory builders for browser-use tasks on the mock websites.

A browser task dir holds::

    task.toml                        metadata.domain = "browser-use", services = the sites
    instruction.md
    environment/Dockerfile           FROM the browser base image (Debian Chromium + fonts)
    environment/browser.json         {"start_url": ...} (where the harness opens the browser)
    environment/fixtures/<site>.json the sites' initial state
    tests/test.sh                    stdlib Python: site state (+ answer.txt) → reward
    solution/solve.sh + actions.json the oracle: Table A3 actions replayed through the
                                     harness's executor (environments.browser.replay)

The verifier's ``checks_code`` is Python that fills the dict ``checks`` (name → bool) with
helpers ``state(site)`` (the site's state), ``events(site)``, ``answer()`` (the text of the
agent's ``answer`` action, "" when none) and ``norm(text)`` (lowercase, single spaces).
"""

from __future__ import annotations

import json
from typing import Any

from environments.browser.answer import ANSWER_FILE
from environments.browser.names import CONTROL_HEADER
from environments.claw.taskgen import scored_checks
from environments.taskdir import TaskConfig

#: Built by scripts/build-gui-images.sh (Debian Chromium + fonts on the base image); the docker
#: backend mounts the virtualenv, so Playwright and the mock sites come from there.
BASE_IMAGE = "openforge/browser-base:bookworm"

VERIFIER = r'''#!/usr/bin/env bash
# Verifier of browser task __NAME__: reads the mock sites' state (and the agent's answer),
# scores the checks, writes ${LOGS_DIR:-/logs}/verifier/reward.txt and reward.json.
# Reward 1.0 only if every check passes; sites unreachable -> 0.0.
set -u
python3 - <<'PYEOF'
import json, os, urllib.request

URL = (os.environ.get("CLAW_URL") or "http://127.0.0.1:8790").rstrip("/")
LOGS = os.environ.get("LOGS_DIR") or "/logs"
OUT = os.path.join(LOGS, "verifier")


def _get(site):
    req = urllib.request.Request(URL + "/" + site + "/state", headers={"__HEADER__": "1"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def state(site):
    return _get(site)["state"]


def events(site):
    return _get(site)["events"]


def answer():
    try:
        with open(os.path.join(LOGS, "agent", "__ANSWER__"), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def norm(text):
    return " ".join(str(text).lower().split())


__SCORED__PYEOF
'''

SOLVE = """#!/usr/bin/env bash
# Oracle of browser task __NAME__: replays solution/actions.json (Table A3 actions) through
# the browser-use harness's action executor against the task's mock sites.
set -euo pipefail
exec "${OPENFORGE_PYTHON:-python3}" -m environments.browser.replay "$(dirname "$0")/actions.json"
"""


def verifier_script(name: str, checks_code: str) -> str:
    body = "\n".join("    " + line if line.strip() else "" for line in checks_code.strip("\n").splitlines())
    return (VERIFIER.replace("__NAME__", name).replace("__HEADER__", CONTROL_HEADER)
            .replace("__ANSWER__", ANSWER_FILE).replace("__SCORED__", scored_checks(body)))


def dockerfile(sites: list[str]) -> str:
    """The sandbox image: the browser base image (scripts/build-gui-images.sh: Debian Chromium
    and fonts); Playwright and the sites' code come from the runtime the backend mounts."""
    return (f"# browser-use task sandbox: mock sites {', '.join(sites)}\n"
            f"FROM {BASE_IMAGE}\n"
            "ENV OPENFORGE_CHROMIUM=/usr/bin/chromium\n"
            "WORKDIR /app\n")


def task_files(*, name: str, sites: list[str], fixtures: dict[str, dict[str, Any]], start_url: str,
               actions: list[dict[str, Any]], checks_code: str) -> dict[str, str | bytes]:
    """Every file of the task dir except instruction.md and task.toml."""
    files: dict[str, str | bytes] = {
        "environment/Dockerfile": dockerfile(sites),
        "environment/browser.json": json.dumps({"start_url": start_url}, indent=2) + "\n",
        "tests/test.sh": verifier_script(name, checks_code),
        "solution/solve.sh": SOLVE.replace("__NAME__", name),
        "solution/actions.json": json.dumps(actions, indent=1) + "\n",
    }
    for site in sites:
        files[f"environment/fixtures/{site}.json"] = json.dumps(fixtures.get(site, {}), indent=1, sort_keys=True) + "\n"
    return files


def task_config(*, name: str, title: str, category: str, difficulty: str, sites: list[str], keywords: list[str],
                purpose: str = "rl", run_id: str | None = None, proposer: str = "procedural",
                extra_metadata: dict[str, Any] | None = None, agent_timeout: float = 600.0) -> TaskConfig:
    return TaskConfig.model_validate({
        "task": {"name": name, "description": title, "keywords": keywords},
        "metadata": {"domain": "browser-use", "category": category, "difficulty": difficulty, "purpose": purpose,
                     "services": sites, "harnesses": ["browser-use"], "synth_run_id": run_id, "proposer": proposer,
                     **(extra_metadata or {})},
        "agent": {"timeout_sec": agent_timeout},
        "verifier": {"timeout_sec": 60.0},
        "environment": {"build_timeout_sec": 600.0, "cpus": 1, "memory_mb": 2048, "storage_mb": 4096},
    })
