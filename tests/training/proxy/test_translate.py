"""Pure translation functions: Responses ⇄ chat, Messages ⇄ chat, chat stream replay, errors."""

from __future__ import annotations

import json

import pytest

from training.proxy.errors import ProxyError, error_body
from training.proxy.translate_chat import (
    chat_for_client,
    chat_for_engine,
    chat_stream_chunks,
)
from training.proxy.translate_messages import (
    chat_to_messages,
    messages_stream_events,
    messages_to_chat,
)
from training.proxy.translate_responses import (
    ToolMap,
    chat_to_responses,
    responses_stream_events,
    responses_to_chat,
)


def completion(content: str | None = "hi", tool_calls: list | None = None, finish: str = "stop") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "engine-model",
            "prompt_token_ids": [1, 2, 3],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": tool_calls or []},
                         "finish_reason": finish, "token_ids": [7, 8],
                         "logprobs": {"content": [{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -0.2}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def call(name: str, args: str, cid: str = "call_1") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


# -- Responses -----------------------------------------------------------------------------
def test_codex_style_responses_request_to_chat() -> None:
    body = {
        "model": "gpt-x", "instructions": "You are Codex.", "store": False, "stream": True,
        "reasoning": {"effort": "low"}, "include": ["reasoning.encrypted_content"], "max_output_tokens": 99,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
                  {"type": "custom", "name": "apply_patch", "description": "patch", "format": {"type": "grammar"}},
                  {"type": "namespace", "name": "multi_agent_v1", "description": "agents",
                   "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}]},
                  {"type": "web_search"}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev rules"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it"}]},
            {"type": "reasoning", "summary": [], "encrypted_content": "xx"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done"},
        ],
    }
    chat, tools = responses_to_chat(body)
    assert tools.custom == {"apply_patch"} and tools.namespaces == {"spawn_agent": "multi_agent_v1"}
    assert chat["max_tokens"] == 99 and "stream" not in chat
    assert [t["function"]["name"] for t in chat["tools"]] == ["exec_command", "apply_patch", "spawn_agent"]
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["system", "system", "user", "assistant", "tool", "tool"]
    assistant = chat["messages"][3]
    assert assistant["content"] == "ok"
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert json.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {"input": "*** Begin Patch"}
    assert chat["messages"][4] == {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}


def test_responses_string_input_and_unsupported_params() -> None:
    chat, _ = responses_to_chat({"model": "m", "input": "hello", "tool_choice": "auto"})
    assert chat["messages"] == [{"role": "user", "content": "hello"}]
    with pytest.raises(ProxyError) as exc:
        responses_to_chat({"model": "m", "input": "x", "background": True})
    assert exc.value.status == 400 and exc.value.param == "background"
    with pytest.raises(ProxyError):
        responses_to_chat({"model": "m", "input": [{"type": "message", "role": "robot", "content": "x"}]})


def test_chat_to_responses_maps_text_calls_and_custom_tools() -> None:
    answer = completion("thinking aloud", [call("exec_command", '{"cmd":"ls"}', "c9"),
                                           call("apply_patch", '{"input":"*** Begin Patch"}', "c10"),
                                           call("spawn_agent", "{}", "c11")], "tool_calls")
    out = chat_to_responses(answer, {"model": "gpt-x"}, ToolMap(custom={"apply_patch"},
                                                                namespaces={"spawn_agent": "multi_agent_v1"}))
    kinds = [o["type"] for o in out["output"]]
    assert kinds == ["message", "function_call", "custom_tool_call", "function_call"]
    assert out["output"][3]["namespace"] == "multi_agent_v1" and "namespace" not in out["output"][1]
    assert out["output"][1]["call_id"] == "c9" and out["output"][1]["arguments"] == '{"cmd":"ls"}'
    assert out["output"][2]["input"] == "*** Begin Patch"
    assert out["model"] == "gpt-x" and out["status"] == "completed"
    assert out["usage"]["input_tokens"] == 3 and out["usage"]["total_tokens"] == 5
    truncated = chat_to_responses(completion("cut", finish="length"), {"model": "m"})
    assert truncated["status"] == "incomplete" and truncated["incomplete_details"]["reason"] == "max_output_tokens"


def test_responses_stream_has_item_events_codex_needs() -> None:
    out = chat_to_responses(completion("hi", [call("f", "{}")], "tool_calls"), {"model": "m"})
    events = responses_stream_events(out)
    kinds = [k for k, _ in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_item.added") == 2 and kinds.count("response.output_item.done") == 2
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    done_items = [d["item"] for k, d in events if k == "response.output_item.done"]
    assert done_items == out["output"]
    assert events[0][1]["response"]["status"] == "in_progress"


# -- Messages ------------------------------------------------------------------------------
def test_claude_code_style_messages_to_chat() -> None:
    body = {
        "model": "claude-sonnet", "max_tokens": 32000, "stream": True, "thinking": {"type": "adaptive"},
        "context_management": {"edits": []}, "metadata": {"user_id": "u"}, "stop_sequences": ["STOP"],
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web"}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "messages": [
            {"role": "system", "content": "reminder"},
            {"role": "user", "content": [{"type": "text", "text": "run ls"}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                              {"type": "text", "text": "Sure."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "text", "text": "a.txt"}]},
                                         {"type": "text", "text": "and now?"}]},
        ],
    }
    chat = messages_to_chat(body)
    assert [m["role"] for m in chat["messages"]] == ["system", "system", "user", "assistant", "tool", "user"]
    assert chat["messages"][0]["content"] == "You are Claude Code."
    assert chat["messages"][3]["content"] == "Sure."
    assert chat["messages"][3]["tool_calls"][0]["id"] == "toolu_1"
    assert json.loads(chat["messages"][3]["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
    assert chat["messages"][4] == {"role": "tool", "tool_call_id": "toolu_1", "content": "a.txt"}
    assert [t["function"]["name"] for t in chat["tools"]] == ["Bash"]
    assert chat["tool_choice"] == "required" and chat["parallel_tool_calls"] is False
    assert chat["stop"] == ["STOP"] and chat["max_tokens"] == 32000


def test_messages_tool_result_error_and_images() -> None:
    chat = messages_to_chat({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                                     {"type": "text", "text": "what is it?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}]},
    ]})
    assert chat["messages"][0]["content"][0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    assert chat["messages"][1]["content"] is None
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": "Error: boom"}
    assert len(chat["messages"]) == 3  # no empty user message after a pure tool_result turn


def test_messages_validation_errors() -> None:
    with pytest.raises(ProxyError, match="max_tokens"):
        messages_to_chat({"model": "m", "messages": []})
    with pytest.raises(ProxyError, match="role"):
        messages_to_chat({"model": "m", "max_tokens": 1, "messages": [{"role": "tool", "content": "x"}]})


def test_chat_to_messages_and_stream_events() -> None:
    answer = completion("Let me look.", [call("Bash", '{"command":"ls"}', "toolu_9")], "tool_calls")
    msg = chat_to_messages(answer, {"model": "claude-x"})
    assert msg["stop_reason"] == "tool_use" and msg["model"] == "claude-x"
    assert msg["content"] == [{"type": "text", "text": "Let me look."},
                              {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls"}}]
    events = messages_stream_events(msg)
    kinds = [k for k, _ in events]
    assert kinds == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"command": "ls"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert chat_to_messages(completion("x", finish="length"), {})["stop_reason"] == "max_tokens"


def test_malformed_tool_arguments_come_back_as_text_not_invented_input() -> None:
    msg = chat_to_messages(completion(None, [call("Bash", "{not json")], "tool_calls"), {"model": "m"})
    assert msg["content"] == [{"type": "text", "text": "Bash({not json)"}]
    assert msg["stop_reason"] == "end_turn"


# -- chat ------------------------------------------------------------------------------------
def test_chat_passthrough_strips_engine_extras() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True,
            "stream_options": {"include_usage": True}, "max_completion_tokens": 5}
    engine_body = chat_for_engine(body)
    assert "stream" not in engine_body and "stream_options" not in engine_body and engine_body["max_tokens"] == 5
    with pytest.raises(ProxyError):
        chat_for_engine({"model": "m", "messages": []})
    client = chat_for_client(completion(), {"model": "alias"})
    assert "prompt_token_ids" not in client and "token_ids" not in client["choices"][0]
    assert client["choices"][0]["logprobs"] is None and client["model"] == "alias"
    assert chat_for_client(completion(), {"logprobs": True})["choices"][0]["logprobs"]["content"][0]["logprob"] == -0.1
    chunks = chat_stream_chunks(completion("hey", [call("f", '{"a":1}')], "tool_calls"), body)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    args = "".join(tc["function"].get("arguments") or "" for c in chunks if c["choices"]
                   for tc in c["choices"][0]["delta"].get("tool_calls", []))
    assert text == "hey" and json.loads(args) == {"a": 1}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 5


def test_error_bodies_per_api() -> None:
    assert error_body("messages", 401, "no")["error"] == {"type": "authentication_error", "message": "no"}
    assert error_body("messages", 413, "big")["error"]["type"] == "request_too_large"
    assert error_body("chat", 502, "down", code="x")["error"] == {"message": "down", "type": "server_error",
                                                                 "param": None, "code": "x"}
