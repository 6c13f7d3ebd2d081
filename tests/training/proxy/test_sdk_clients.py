"""The official openai and anthropic SDKs work through the proxy, and every call is recorded
with the engine's token ids and logprobs (fake vLLM engine on loopback)."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from testkit.fakes.vllm import FakeReply, FakeVLLM, fake_tokenize
from training.proxy.client import ProxyAdminClient, Registration

TOOLS_CHAT = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                                "required": ["city"]}}}]


def _assert_sample(call: dict, fake: FakeVLLM, api: str) -> None:
    assert call["api"] == api
    assert call["status"] == "ok"
    assert call["prompt_token_ids"] and all(isinstance(t, int) for t in call["prompt_token_ids"])
    assert call["response_token_ids"] and len(call["response_logprobs"]) == len(call["response_token_ids"])
    assert call["latency_ms"] is not None and call["latency_ms"] >= 0


async def test_openai_chat_sync_stream_and_tools(fake_vllm: FakeVLLM, admin: ProxyAdminClient, rollout: Registration) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="unused", max_retries=0)
    fake_vllm.script(FakeReply.text("hello there"))
    out = await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "hello there"
    assert out.choices[0].finish_reason == "stop"

    fake_vllm.script(FakeReply.text("streamed answer"))
    stream = await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "s"}],
                                                  stream=True, stream_options={"include_usage": True})
    text, usage = "", None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    assert text == "streamed answer"
    assert usage is not None and usage.completion_tokens == len(fake_tokenize("streamed answer"))

    fake_vllm.script(FakeReply.tool("get_weather", {"city": "Paris"}))
    out = await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "weather?"}],
                                               tools=TOOLS_CHAT)
    call = out.choices[0].message.tool_calls[0]
    assert out.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}

    fake_vllm.script(FakeReply.tool("get_weather", {"city": "Oslo"}))
    stream = await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "w"}],
                                                  tools=TOOLS_CHAT, stream=True)
    name, args = "", ""
    async for chunk in stream:
        for tc in chunk.choices[0].delta.tool_calls or []:
            name += tc.function.name or ""
            args += tc.function.arguments or ""
    assert name == "get_weather" and json.loads(args) == {"city": "Oslo"}

    calls = await admin.calls(rollout.rollout_id)
    assert [c["index"] for c in calls] == [0, 1, 2, 3]
    for c in calls:
        _assert_sample(c, fake_vllm, "chat")
    assert calls[0]["response_token_ids"] == fake_tokenize("hello there")
    assert calls[2]["request"]["tools"] == TOOLS_CHAT
    # The engine was asked non-streamed, with vLLM's token-id and logprob extras.
    assert all(r["return_token_ids"] is True and r["logprobs"] is True and "stream" not in r for r in fake_vllm.requests)
    # What the client got carries no token ids.
    assert "prompt_token_ids" not in out.model_dump()
    assert (await admin.get(rollout.rollout_id))["n_calls"] == 4


async def test_openai_responses_sync_and_stream(fake_vllm: FakeVLLM, admin: ProxyAdminClient, rollout: Registration) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="unused", max_retries=0)
    fake_vllm.script(FakeReply.text("plain answer"))
    out = await client.responses.create(model="policy", instructions="be brief", input="hi")
    assert out.output_text == "plain answer" and out.status == "completed"

    tools = [{"type": "function", "name": "exec_command", "description": "run",
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
    fake_vllm.script(FakeReply.tool("exec_command", {"cmd": "ls"}))
    out = await client.responses.create(model="policy", input=[{"role": "user", "content": "list files"}], tools=tools)
    fc = out.output[0]
    assert fc.type == "function_call" and fc.name == "exec_command" and json.loads(fc.arguments) == {"cmd": "ls"}

    # The tool round trip: Codex resends history with function_call + function_call_output.
    fake_vllm.script(FakeReply.text("two files"))
    history = [{"role": "user", "content": "list files"},
               {"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments},
               {"type": "function_call_output", "call_id": fc.call_id, "output": "a.txt\nb.txt"}]
    events = []
    async with client.responses.stream(model="policy", input=history, tools=tools) as stream:
        async for event in stream:
            events.append(event.type)
        final = await stream.get_final_response()
    assert final.output_text == "two files"
    for needed in ("response.created", "response.output_item.added", "response.output_text.delta",
                   "response.output_item.done", "response.completed"):
        assert needed in events
    engine_messages = fake_vllm.requests[-1]["messages"]
    assert [m["role"] for m in engine_messages] == ["user", "assistant", "tool"]
    assert engine_messages[1]["tool_calls"][0]["id"] == fc.call_id
    assert engine_messages[2] == {"role": "tool", "tool_call_id": fc.call_id, "content": "a.txt\nb.txt"}

    calls = await admin.calls(rollout.rollout_id)
    assert len(calls) == 3
    for c in calls:
        _assert_sample(c, fake_vllm, "responses")
    assert calls[0]["request"]["messages"][0] == {"role": "system", "content": "be brief"}
    assert calls[0]["request"]["_client_request"]["instructions"] == "be brief"


async def test_anthropic_messages_sync_stream_and_tool_use(fake_vllm: FakeVLLM, admin: ProxyAdminClient,
                                                           rollout: Registration) -> None:
    client = anthropic.AsyncAnthropic(base_url=rollout.anthropic_base_url, api_key="unused", max_retries=0)
    fake_vllm.script(FakeReply.text("bonjour"))
    out = await client.messages.create(model="claude-x", max_tokens=256, system="you are terse",
                                       messages=[{"role": "user", "content": "hi"}])
    assert out.content[0].text == "bonjour" and out.stop_reason == "end_turn"

    tools = [{"name": "Bash", "description": "run a command",
              "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
    fake_vllm.script(FakeReply.tool("Bash", {"command": "pwd"}, content="Let me check."))
    async with client.messages.stream(model="claude-x", max_tokens=256, tools=tools,
                                      messages=[{"role": "user", "content": "where am I?"}]) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == "Let me check."
    tool_use = final.content[1]
    assert tool_use.type == "tool_use" and tool_use.name == "Bash" and tool_use.input == {"command": "pwd"}

    fake_vllm.script(FakeReply.text("You are in /work."))
    out = await client.messages.create(
        model="claude-x", max_tokens=256, tools=tools,
        messages=[{"role": "user", "content": "where am I?"},
                  {"role": "assistant", "content": [b.model_dump() for b in final.content]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "/work"}]}])
    assert out.content[0].text == "You are in /work."
    sent = fake_vllm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["tool_call_id"] == tool_use.id and sent[2]["content"] == "/work"

    calls = await admin.calls(rollout.rollout_id)
    assert len(calls) == 3
    for c in calls:
        _assert_sample(c, fake_vllm, "messages")
    assert calls[0]["request"]["messages"][0] == {"role": "system", "content": "you are terse"}


async def test_claude_code_style_request_is_accepted(fake_vllm: FakeVLLM, rollout: Registration) -> None:
    """system entries inside messages, thinking, context_management and ?beta=true are accepted."""
    client = anthropic.AsyncAnthropic(base_url=rollout.anthropic_base_url, api_key="unused", max_retries=0)
    out = await client.messages.create(
        model="claude-sonnet", max_tokens=16000,
        system=[{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "system", "content": "inner system"},
                  {"role": "user", "content": [{"type": "text", "text": "hey", "cache_control": {"type": "ephemeral"}}]}],
        extra_body={"thinking": {"type": "adaptive"}, "context_management": {"edits": []}},
        extra_query={"beta": "true"}, extra_headers={"anthropic-beta": "claude-code-20250219"})
    assert out.content[0].text == "echo: hey"
    assert [m["role"] for m in fake_vllm.requests[-1]["messages"]] == ["system", "system", "user"]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_token_in_header_on_plain_v1(api: str, proxy, rollout: Registration, admin: ProxyAdminClient) -> None:
    if api == "openai":
        client = openai.AsyncOpenAI(base_url=f"{proxy.url}/v1", api_key=rollout.token, max_retries=0)
        out = await client.chat.completions.create(model="p", messages=[{"role": "user", "content": "a"}])
        assert out.choices[0].message.content == "echo: a"
    else:
        client = anthropic.AsyncAnthropic(base_url=proxy.url, api_key=rollout.token, max_retries=0)
        out = await client.messages.create(model="p", max_tokens=10, messages=[{"role": "user", "content": "b"}])
        assert out.content[0].text.startswith("echo: b")
    assert len(await admin.calls(rollout.rollout_id)) == 1


async def test_models_lists_engine_models(fake_vllm: FakeVLLM, rollout: Registration) -> None:
    client = openai.AsyncOpenAI(base_url=rollout.base_url, api_key="unused", max_retries=0)
    models = [m.id async for m in client.models.list()]
    assert models == [fake_vllm.model]
