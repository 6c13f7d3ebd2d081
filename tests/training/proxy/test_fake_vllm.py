"""The shared fake vLLM server itself speaks vLLM's wire format (so tests built on it mean
something): token ids and logprobs when asked, streaming, tool calls, failures."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from testkit.fakes.vllm import FakeReply, FakeVLLM, fake_tokenize


async def test_wire_format_stream_tools_and_failures(fake_vllm: FakeVLLM) -> None:
    async with httpx.AsyncClient(base_url=fake_vllm.base_url) as http:
        plain = (await http.post("/chat/completions", json={"model": fake_vllm.model,
                                                            "messages": [{"role": "user", "content": "x"}]})).json()
        assert "prompt_token_ids" not in plain and plain["choices"][0]["logprobs"] is None
        full = (await http.post("/chat/completions", json={"model": fake_vllm.model, "return_token_ids": True,
                                                           "logprobs": True, "max_tokens": 3,
                                                           "messages": [{"role": "user", "content": "hello"}]})).json()
        choice = full["choices"][0]
        assert choice["token_ids"] == fake_tokenize("echo: hello")[:3] and choice["finish_reason"] == "length"
        assert len(choice["logprobs"]["content"]) == 3 and full["prompt_token_ids"]
        assert (await http.post("/chat/completions", json={"model": "other", "messages": [{"role": "user", "content": "x"}]})).status_code == 404
    client = openai.AsyncOpenAI(base_url=fake_vllm.base_url, api_key="x", max_retries=0)
    fake_vllm.script(FakeReply.tool("f", {"a": 1}), FakeReply.failure(503, "busy"))
    stream = await client.chat.completions.create(model=fake_vllm.model, stream=True,
                                                  messages=[{"role": "user", "content": "x"}])
    args = ""
    async for chunk in stream:
        for tc in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            args += tc.function.arguments or ""
    assert json.loads(args) == {"a": 1}
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model=fake_vllm.model, messages=[{"role": "user", "content": "x"}])
    assert len(fake_vllm.requests) == 5
