"""The contact-lookup family: one tool offered, graded checks (partial credit per rung)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from environments.taskdir import write_task
from synthesis.procedural import generate
from synthesis.procedural.lookup import WEIGHTS
from synthesis.procedural.render import task_config, task_files
from training.orchestrator.single import rollout_once


def _task(tmp_path: Path, seed: int = 5):  # noqa: ANN202
    spec = generate("contact-lookup", seed, "hard")
    td = write_task(tmp_path / "tasks" / spec.name, task_config(spec), spec.instruction, task_files(spec))
    return spec, td


def test_one_tool_offered_and_plan_teaches_the_call_then_the_answer(tmp_path: Path) -> None:
    spec, td = _task(tmp_path)
    tools = json.loads((td.path / "environment" / "tools.json").read_text())["tools"]
    assert [t["name"] for t in tools] == ["contacts_search"]
    plan = json.loads((td.path / "solution" / "plan.json").read_text())
    assert plan[0]["tool"] == "contacts_search" and "final" in plan[1]
    person = spec.solution[0].args["query"]
    contacts = json.loads((td.path / "environment" / "fixtures" / "contacts.json").read_text())["contacts"]
    assert sum(c["name"].split()[0] == person.split()[0] for c in contacts) >= 2, "hard: a same-first-name decoy"


def _agent(query: str | None, answer: str | None) -> list[str]:
    lines = ["set -e"]
    if query is not None:
        lines.append(f"python3 -m environments.claw.call contacts_search '{json.dumps({'query': query})}' >/dev/null")
    if answer is not None:
        lines.append('mkdir -p "${LOGS_DIR:-/logs}/agent"')
        lines.append(f"printf %s {json.dumps(answer)} > \"${{LOGS_DIR:-/logs}}/agent/final_answer.txt\"")
    return ["bash", "-c", "\n".join(lines)]


@pytest.mark.parametrize(
    ("query", "answer", "expected"),
    [
        ("Acme", None, WEIGHTS["searched"]),  # the right tool, a query about someone else
        ("{last}", None, WEIGHTS["searched"] + WEIGHTS["searched_for_person"]),
        (None, "I do not know {last}'s details.", WEIGHTS["names_person"]),
        ("{first} {last}", "{first} {last}: {value}", 1.0),
        # the search result echoed as the reply (the person's record, every match, or the
        # record cut by the token cap right after the right value): not an answer, whatever
        # values it holds; only the call rungs count
        ("{first} {last}", "{record}", WEIGHTS["searched"] + WEIGHTS["searched_for_person"]),
        ("{first} {last}", "{matches}", WEIGHTS["searched"] + WEIGHTS["searched_for_person"]),
        ("{first} {last}", "<tool_response>\n{cut}", WEIGHTS["searched"] + WEIGHTS["searched_for_person"]),
    ],
    ids=["other-person", "surname-only", "no-call", "answer", "record-dump", "all-matches-dump", "cut-dump"],
)
def test_rungs_give_partial_credit(tmp_path: Path, query: str | None, answer: str | None, expected: float) -> None:
    spec, td = _task(tmp_path)
    first, last = spec.solution[0].args["query"].split(" ", 1)
    value = spec.checks[-1]["contains"][0]
    contacts = spec.fixtures["contacts"]["contacts"]
    record = next(c for c in contacts if c["name"] == f"{first} {last}")
    matches = [c for c in contacts if first in c["name"] or last in c["name"]]
    assert len(matches) >= 2  # hard: the decoy shares the first name
    asked = next(k for k, v in record.items() if v == value)
    fill = {"first": first, "last": last, "value": value, "record": json.dumps({"result": {"contacts": [record]}}),
            "matches": json.dumps({"result": {"contacts": matches}}),
            "cut": json.dumps({"result": {"contacts": [{"name": record["name"], asked: value}]}})[:-3]}
    argv = _agent(query.format(**fill) if query else None, answer.format(**fill) if answer else None)
    out = asyncio.run(rollout_once(str(td.path), "command", harness_options={"argv": argv}, record=False))
    assert out["status"] == "ok", out
    assert out["reward"] == pytest.approx(expected), out.get("checks")
