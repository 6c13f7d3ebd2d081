"""The oracle teacher engine: plans from solve.sh / plan.json, replayed in the policy's format."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from training.engines.base import EngineRequestError
from training.engines.local.tools import parse_tool_calls
from training.engines.oracle import FINAL_ANSWER, OracleTeacherEngine, load_plan, parse_oracle_plan

SOLVE = """#!/usr/bin/env bash
set -euo pipefail
call() { python3 -m environments.claw.call "$@" >/dev/null; }
# look it up first
call calendar_list_events '{"date": "2026-03-04"}'
call calendar_delete_event '{"id": "e3", "note": "it'"'"'s cancelled"}'
python3 -m environments.claw.call notes_add_todo '{"title": "x"}'
echo done > "$WS/out.txt"
"""


def test_parse_plan_follows_wrappers_and_quoting() -> None:
    plan = parse_oracle_plan(SOLVE)
    assert [(s.tool, s.arguments) for s in plan] == [
        ("calendar_list_events", {"date": "2026-03-04"}),
        ("calendar_delete_event", {"id": "e3", "note": "it's cancelled"}),
        ("notes_add_todo", {"title": "x"}),
    ]


def test_parse_plan_reads_the_claw_call_command() -> None:
    """The SKILL.md command (``claw-call``), directly and wrapped, as well as the module form."""
    solve = ("set -e\nclaw() { claw-call \"$@\"; }\nclaw kb_search '{\"query\": \"a b\"}'\n"
             "claw-call kb_get_article '{\"id\": \"KB-1\"}' >/dev/null\nclaw-call --list\n")
    assert [(s.tool, s.arguments) for s in parse_oracle_plan(solve)] == [
        ("kb_search", {"query": "a b"}), ("kb_get_article", {"id": "KB-1"})]


def test_plan_json_takes_precedence(tmp_path: Path) -> None:
    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "solve.sh").write_text(SOLVE)
    (tmp_path / "solution" / "plan.json").write_text(json.dumps([{"tool": "write_file", "arguments": {"path": "a"}}]))
    assert [s.tool for s in load_plan(tmp_path)] == ["write_file"]


def test_replays_the_plan_then_answers(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    engine = OracleTeacherEngine({"Cancel the meeting.": parse_oracle_plan(SOLVE)[:2]}, tok)
    tools = [{"type": "function", "function": {"name": "calendar_delete_event", "parameters": {"type": "object"}}}]
    messages = [{"role": "user", "content": "Cancel the meeting.\n"}]
    seen = []
    for _ in range(3):
        out = asyncio.run(engine.chat_completions({"messages": messages, "tools": tools}))
        choice = out["choices"][0]
        assert out["prompt_token_ids"] and choice["token_ids"][-1] == tok.eos_token_id
        text = tok.decode(choice["token_ids"], skip_special_tokens=True)
        if choice["message"].get("tool_calls"):
            _, calls = parse_tool_calls(text)  # what the policy must learn to write parses back
            seen.append(calls[0]["function"]["name"])
            messages += [{"role": "assistant", "content": None, "tool_calls": choice["message"]["tool_calls"]},
                         {"role": "tool", "tool_call_id": "x", "content": "{}"}]
        else:
            assert choice["message"]["content"] == FINAL_ANSWER
    assert seen == ["calendar_list_events", "calendar_delete_event"]
    with pytest.raises(EngineRequestError, match="no task instruction"):
        asyncio.run(engine.chat_completions({"messages": [{"role": "user", "content": "something else"}]}))


def test_plan_json_final_step_is_the_reply(tmp_path: Path, tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    (tmp_path / "solution").mkdir()
    (tmp_path / "instruction.md").write_text("Reply with only the word maple.\n")
    (tmp_path / "solution" / "plan.json").write_text(json.dumps(
        [{"tool": "read_file", "arguments": {"path": "a"}}, {"final": "maple"}]))
    plan = load_plan(tmp_path)
    assert [(s.tool, s.final) for s in plan] == [("read_file", None), (None, "maple")]
    engine = OracleTeacherEngine.from_task_dirs([tmp_path], AutoTokenizer.from_pretrained(tiny_model_dir))
    messages = [{"role": "user", "content": "Reply with only the word maple."},
                {"role": "assistant", "content": "reading"}, {"role": "tool", "tool_call_id": "x", "content": "{}"}]
    out = asyncio.run(engine.chat_completions({"messages": messages}))
    assert out["choices"][0]["message"]["content"] == "maple"


def test_plan_json_step_without_tool_or_final_is_refused(tmp_path: Path) -> None:
    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "plan.json").write_text(json.dumps([{"arguments": {}}]))
    with pytest.raises(ValueError, match=r"plan\.json: step 0: needs 'tool'"):
        load_plan(tmp_path)


# -- a harness with one shell tool (mini-swe-agent's ``bash``) ---------------------------------

BASH = {"type": "function", "function": {"name": "bash", "description": "Execute a bash command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
MINI_PROMPT = ("Please solve this issue: Find O'Neil's phone number.\n\n... finish your work by issuing the "
               "following command: `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`.")


def test_shell_tool_is_the_one_function_requiring_a_string_command() -> None:
    from training.engines.oracle import shell_tool

    other = {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
    optional = {"type": "function", "function": {"name": "run", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}}}}}
    assert shell_tool([BASH]) == "bash"
    assert shell_tool([other, BASH, optional]) == "bash"  # `run` does not require `command`
    assert shell_tool([{"name": "sh", "parameters": BASH["function"]["parameters"]}]) == "sh"  # flat form
    assert shell_tool([BASH, {"type": "function", "function": {**BASH["function"], "name": "exec"}}]) is None
    assert shell_tool([other]) is None and shell_tool(None) is None


def test_skill_command_round_trips_through_the_plan_parser() -> None:
    from training.engines.oracle import PlanStep, skill_command

    step = PlanStep("contacts_search", {"query": "O'Neil \"Jr\" $HOME `x`"})
    command = skill_command(step)
    assert command.startswith("claw-call contacts_search '")
    assert parse_oracle_plan(command) == [step]  # the shell sees exactly the step's JSON


def test_submit_command_prints_the_sentinel_then_the_reply() -> None:
    import subprocess

    from training.engines.oracle import submit_command

    reply = "O'Neil's phone is 770-555-7190 \\n -n $HOME"
    out = subprocess.run(["sh", "-c", submit_command("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", reply)],
                         capture_output=True, text=True, check=True).stdout
    lines = out.lstrip().splitlines(keepends=True)  # mini-swe-agent's own submission rule
    assert lines[0].strip() == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert "".join(lines[1:]) == reply + "\n"


def test_shell_harness_gets_skill_calls_then_submits_the_reply(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    from training.engines.local.prompt import render_prompt
    from training.engines.oracle import PlanStep, skill_command, submit_command

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    plan = [PlanStep("contacts_search", {"query": "O'Neil"}), PlanStep(None, {}, final="O'Neil: 770-555-7190.")]
    engine = OracleTeacherEngine({"Find O'Neil's phone number.": plan}, tok)
    messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant."},
                            {"role": "user", "content": MINI_PROMPT}]
    commands = []
    for _ in range(2):
        body = {"messages": messages, "tools": [BASH]}
        out = asyncio.run(engine.chat_completions(body))
        choice = out["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        assert out["prompt_token_ids"] == render_prompt(tok, messages, [BASH])  # rendered as the local engine does
        _, calls = parse_tool_calls(tok.decode(choice["token_ids"], skip_special_tokens=True))
        assert [c["function"]["name"] for c in calls] == ["bash"]
        commands.append(json.loads(calls[0]["function"]["arguments"])["command"])
        messages += [{"role": "assistant", "content": None, "tool_calls": choice["message"]["tool_calls"]},
                     {"role": "tool", "tool_call_id": "x", "content": "{}"}]
    assert commands == [skill_command(plan[0]),
                        submit_command("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "O'Neil: 770-555-7190.")]


def test_shell_harness_without_a_submit_command_gets_the_reply_as_text(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    from training.engines.oracle import PlanStep

    engine = OracleTeacherEngine({"Say maple.": [PlanStep(None, {}, final="maple")]},
                                 AutoTokenizer.from_pretrained(tiny_model_dir))
    out = asyncio.run(engine.chat_completions({"messages": [{"role": "user", "content": "Say maple."}], "tools": [BASH]}))
    assert out["choices"][0]["message"] == {"role": "assistant", "content": "maple"}
