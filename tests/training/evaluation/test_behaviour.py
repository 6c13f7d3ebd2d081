"""Behaviour analysis over recorded calls in the three harness APIs."""

from __future__ import annotations

from pathlib import Path

from training.evaluation.actions import response_actions, tool_results, trajectory_steps
from training.evaluation.behaviour import Trajectory, capabilities, radar_png, tool_usage


def chat_call(index: int, tool: str | None, args: str = "{}", tool_result: str | None = None) -> dict:
    messages = [{"role": "user", "content": "do it"}]
    if tool_result is not None:
        messages += [{"role": "assistant", "tool_calls": [{"function": {"name": "x", "arguments": "{}"}}]},
                     {"role": "tool", "content": tool_result}]
    message = {"role": "assistant", "content": None if tool else "done"}
    if tool:
        message["tool_calls"] = [{"id": "c", "type": "function", "function": {"name": tool, "arguments": args}}]
    return {"index": index, "api": "chat", "request": {"messages": messages}, "response": {"choices": [{"message": message}]}}


def test_actions_from_each_api() -> None:
    acts, _ = response_actions("responses", {"output": [{"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}'}]})
    assert [(a.tool, a.arguments) for a in acts] == [("exec_command", {"cmd": "ls"})]
    acts, text = response_actions("messages", {"content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]})
    assert [a.tool for a in acts] == ["Bash"] and text == "hi"
    acts, _ = response_actions("chat", {"choices": [{"message": {"content": 'Action: {"tool": "gmail_send", "args": {"to": "a"}}'}}]})
    assert [(a.tool, a.arguments) for a in acts] == [("gmail_send", {"to": "a"})]
    acts, _ = response_actions("chat", {"choices": [{"message": {"tool_calls": [{"function": {"name": "t", "arguments": "{bad"}}]}}]})
    assert acts[0].well_formed is False


def test_tool_errors_are_read_from_the_next_request() -> None:
    assert tool_results("messages", {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "ok", "is_error": True}]}]}) == [("ok", True)]
    assert tool_results("responses", {"input": [{"type": "function_call_output", "output": "Error: no such id"}]})[0][1] is True
    assert tool_results("chat", {"messages": [{"role": "tool", "content": '{"result": 1}'}]}) == [('{"result": 1}', False)]


def test_capabilities_on_hand_built_trajectories(tmp_path: Path) -> None:
    ok = Trajectory("t1", 1.0, [chat_call(0, "gmail_send", '{"to": "a"}'),
                                chat_call(1, "gmail_read", '{"id": 1}', tool_result='{"error": "not found"}'),
                                chat_call(2, None)], ["gmail_send", "gmail_read", "gmail_search", "gmail_label"])
    bad = Trajectory("t1", 0.0, [chat_call(0, "gmail_send", "{oops"), chat_call(1, "gmail_send", "{}", tool_result="fine"),
                                 chat_call(2, "gmail_send", "{}", tool_result="fine"), chat_call(3, None)],
                     ["gmail_send", "gmail_read", "gmail_search", "gmail_label"])
    caps = capabilities([ok, bad])
    assert caps["format_robustness"] == 6 / 7
    assert caps["error_recovery"] == 1.0  # the one tool error happened in a successful run
    assert caps["self_verification"] == 1.0  # the success's last action reads
    assert caps["tool_coverage"] == (2 / 4 + 1 / 4) / 2
    assert caps["step_efficiency"] == 1.0
    assert tool_usage([ok, bad]) == {"gmail_send": 4, "gmail_read": 1}
    assert [len(s.actions) for s in trajectory_steps(bad.calls)] == [1, 1, 1, 0]
    png = radar_png({"before": caps, "after": {k: 1.0 for k in caps}}, tmp_path / "radar.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_shell_claw_tool_call_reads_by_its_tool_name() -> None:
    from training.evaluation.behaviour import _is_read

    assert _is_read("bash", {"command": "claw-call contacts_search '{\"query\": \"x\"}'"})
    assert not _is_read("exec_command", {"cmd": "claw-call gmail_send '{}'"})
    assert _is_read("bash", {"command": "python3 -m environments.claw.call kb_get_article '{}'"})
    assert not _is_read("bash", {"command": "python3 -m environments.claw.call notes_create '{}'"})
    assert _is_read("bash", {"command": "cat notes.txt"}) and not _is_read("bash", {"command": "rm -rf x"})
