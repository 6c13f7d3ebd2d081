"""Prompts of the synthesis agents (propose, judge, build, refine), as plain templates."""

from __future__ import annotations

import json

from synthesis.pools import PoolItem

SYSTEM = (
    "You are a task author for OpenForge, which trains assistant agents inside their real harnesses. "
    "You only act through the tools you are given. Be concrete and terse."
)

PROPOSE = """Propose {k} new, distinct tasks for the `{domain}` domain (purpose: {purpose}).
Each task is an instruction a personal-assistant agent receives; it acts only through mock
services ({services}) and its result must be checkable from the services' final state or a
file in its workspace. Ground each proposal in one of these reference items:

{items}

Call list_proposals first to avoid repeating existing tasks, then call append_proposal once
per task (instruction, category, services). Stop when you have appended {k}."""

JUDGE = """Score each candidate task instruction from 0 to 1 for how clear, concrete and
automatically checkable it is (1 = unambiguous with a single verifiable outcome). Call
score_candidate once per candidate.

{candidates}"""

BUILD = """Build the task directory for this instruction (domain `{domain}`, services {services}):

<instruction>
{instruction}
</instruction>

The task dir already holds task.toml, instruction.md and environment/ (Dockerfile,
tools.json). Write:
- environment/fixtures/<service>.json — the initial data of each service (formats in the claw README);
- tests/test.sh — the verifier: reads $CLAW_URL/<service>/state and /audit with stdlib python3,
  writes ${{LOGS_DIR:-/logs}}/verifier/reward.txt (1.0 only if every check passes, else 0.0);
- solution/solve.sh — the oracle, using only `python3 -m environments.claw.call TOOL 'JSON'`.
Then call validate_task, run_check(oracle) (must be 1.0) and run_check(noop) (must be 0.0);
fix files until both hold."""

REFINE = """The task below failed its checks. Patch its files (fixtures, verifier, oracle, or
instruction.md if the instruction is ambiguous) so that the oracle scores 1.0 and the no-op
agent 0.0, without making the task trivial. Verify with run_check before you stop.

Instruction:
{instruction}

Failing checks:
{failures}"""


def render_items(items: list[PoolItem]) -> str:
    return "\n".join(f"- [{i.id}] ({i.kind}; services: {', '.join(i.services) or 'any'}) {i.text}" for i in items)


def render_candidates(rows: list[tuple[int, str]]) -> str:
    return "\n".join(json.dumps({"id": cid, "instruction": text}) for cid, text in rows)
