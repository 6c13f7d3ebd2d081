"""A scripted task author: what the fake model servers answer to synthesis prompts.

Both fakes of paid/remote model APIs in these tests (the Anthropic Messages server for the
``claude`` backend, the OpenAI-compatible one for the ``openai`` backend) ask this script
for the next move, given the prompt text and how many tool results came back so far. Its
proposals are real procedural claw tasks, so the files it writes in build/refine verify.
``broken`` instructions get a do-nothing oracle at build time, which the test stage
catches and the refine stage repairs.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from synthesis.procedural.families import generate
from synthesis.procedural.render import render_solve_sh
from synthesis.procedural.spec import ProceduralTask
from synthesis.procedural.verifier import render_test_sh

FAMILY_CYCLE = ["mail-reply", "ticket-triage", "contact-from-email", "calendar-cancel", "todos-from-email"]


@dataclass
class Move:
    """One model turn: a tool call (short tool name + args) or a final text."""

    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class ScriptedAuthor:
    def __init__(self, break_first_build: bool = True) -> None:
        self.tasks: dict[str, ProceduralTask] = {}
        self.proposed = 0
        self.break_first_build = break_first_build
        self.broken: set[str] = set()
        self.stage_calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def _new_task(self) -> ProceduralTask:
        with self._lock:
            i = self.proposed
            self.proposed += 1
        task = generate(FAMILY_CYCLE[i % len(FAMILY_CYCLE)], 500 + i, "easy")
        self.tasks[" ".join(task.instruction.split())] = task
        return task

    def _lookup(self, text: str) -> ProceduralTask:
        key = " ".join(text.split())
        if key not in self.tasks:
            raise KeyError(f"scripted author: unknown instruction {key[:80]!r}")
        return self.tasks[key]

    def next_move(self, prompt: str, step: int) -> Move:
        """The move after ``step`` tool results in a conversation that began with ``prompt``."""
        if m := re.search(r"Propose (\d+) new", prompt):
            self.stage_calls["propose"] = self.stage_calls.get("propose", 0) + (step == 0)
            k = int(m.group(1))
            if step == 0:
                return Move("list_proposals", {"limit": 20})
            if step <= k:
                t = self._new_task()
                return Move("append_proposal", {"instruction": t.instruction, "category": t.category,
                                                "services": t.services})
            return Move(text=f"Appended {k} proposals.")
        if "Score each candidate" in prompt:
            ids = [json.loads(line)["id"] for line in prompt.splitlines() if line.startswith('{"id"')]
            if step < len(ids):
                return Move("score_candidate", {"id": ids[step], "score": 0.9 - 0.01 * step, "reason": "clear"})
            return Move(text="Scored.")
        if m := re.search(r"<instruction>\n(.*?)\n</instruction>", prompt, re.S):
            self.stage_calls["build"] = self.stage_calls.get("build", 0) + (step == 0)
            task = self._lookup(m.group(1))
            key = " ".join(task.instruction.split())
            if self.break_first_build and step == 0 and not self.broken:
                self.broken.add(key)
            writes = [(f"environment/fixtures/{svc}.json", json.dumps(task.fixtures.get(svc, {}), indent=1))
                      for svc in task.services]
            solve = render_solve_sh(task)
            if key in self.broken:
                solve = "#!/usr/bin/env bash\n# (scripted author: forgot the oracle steps)\nexit 0\n"
            writes += [("tests/test.sh", render_test_sh(task.checks)), ("solution/solve.sh", solve)]
            return self._write_then_check(writes, step, "Task dir built.")
        if m := re.search(r"Instruction:\n(.*?)\n\nFailing checks:", prompt, re.S):
            self.stage_calls["refine"] = self.stage_calls.get("refine", 0) + (step == 0)
            task = self._lookup(m.group(1))
            return self._write_then_check([("solution/solve.sh", render_solve_sh(task))], step, "Oracle fixed.")
        return Move(text="ok")

    @staticmethod
    def _write_then_check(writes: list[tuple[str, str]], step: int, final: str) -> Move:
        if step < len(writes):
            path, content = writes[step]
            return Move("write_file", {"path": path, "content": content})
        rest = [Move("validate_task"), Move("run_check", {"harness": "oracle"}), Move("run_check", {"harness": "noop"})]
        if step - len(writes) < len(rest):
            return rest[step - len(writes)]
        return Move(text=final)
