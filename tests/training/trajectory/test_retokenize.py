"""Chat messages from the three recorded wire formats, and the action keys the SFT filters compare."""

from __future__ import annotations

from training.trajectory.retokenize import action_key, request_messages, response_message


def test_responses_api_request_and_response_become_chat_messages() -> None:
    request = {
        "instructions": "be brief",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd": "ls"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        ],
        "tools": [{"type": "function", "name": "exec_command"}],
    }
    messages, tools = request_messages("responses", request)
    assert [m["role"] for m in messages] == ["system", "system", "user", "assistant", "tool"]
    assert messages[3]["tool_calls"][0]["function"] == {"name": "exec_command", "arguments": '{"cmd": "ls"}'}
    assert messages[4] == {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}
    assert tools == request["tools"]
    reply = response_message("responses", {"output": [{"type": "message", "content": [{"type": "output_text", "text": "done"}]}]})
    assert reply == {"role": "assistant", "content": "done"}


def test_anthropic_messages_request_and_response_become_chat_messages() -> None:
    request = {
        "system": [{"type": "text", "text": "sys"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "let me look"}, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.txt"}]}]},
        ],
    }
    messages, _ = request_messages("messages", request)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["content"] == "let me look" and messages[2]["tool_calls"][0]["function"]["name"] == "Bash"
    assert messages[3]["content"] == "a.txt"
    reply = response_message("messages", {"content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "cat a.txt"}}]})
    assert reply["tool_calls"][0]["function"]["arguments"] == '{"command": "cat a.txt"}'


def test_action_keys_ignore_call_ids_and_argument_order() -> None:
    def call(cid: str, args: str) -> dict:
        return {"role": "assistant", "content": "", "tool_calls": [{"id": cid, "function": {"name": "f", "arguments": args}}]}

    assert action_key(call("a", '{"x": 1, "y": 2}')) == action_key(call("b", '{"y": 2, "x": 1}'))
    assert action_key(call("a", '{"x": 1}')) != action_key(call("a", '{"x": 2}'))
    assert action_key({"role": "assistant", "content": " done "}) == action_key({"role": "assistant", "content": "done"})
