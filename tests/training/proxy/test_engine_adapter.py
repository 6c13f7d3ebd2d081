"""OpenAICompatEngine against the fake vLLM server, and the engine factory."""

from __future__ import annotations

import pytest

from testkit.fakes.vllm import FakeReply, FakeVLLM, fake_tokenize
from training.engines.base import ChatEngine, EngineError, EngineRequestError
from training.engines.factory import make_chat_engine
from training.engines.openai_compat import OpenAICompatEngine


async def test_asks_for_token_ids_and_maps_unknown_model(fake_vllm: FakeVLLM) -> None:
    engine = OpenAICompatEngine(fake_vllm.url)  # /v1 appended
    assert isinstance(engine, ChatEngine)
    assert await engine.list_models() == [fake_vllm.model]
    out = await engine.chat_completions({"model": "whatever", "stream": True,
                                         "messages": [{"role": "user", "content": "hi"}]})
    sent = fake_vllm.requests[-1]
    assert sent["model"] == fake_vllm.model and sent["return_token_ids"] is True and sent["logprobs"] is True
    assert "stream" not in sent
    assert out["choices"][0]["token_ids"] == fake_tokenize("echo: hi")
    assert len(out["choices"][0]["logprobs"]["content"]) == len(out["choices"][0]["token_ids"])
    assert out["prompt_token_ids"]
    await engine.aclose()


async def test_errors_are_classified(fake_vllm: FakeVLLM) -> None:
    engine = OpenAICompatEngine(fake_vllm.base_url, model=fake_vllm.model, timeout=0.5)
    fake_vllm.script(FakeReply.failure(503, "overloaded"), FakeReply.failure(400, "bad temperature"),
                     FakeReply.text("late", delay=2.0))
    msgs = {"messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(EngineError) as e5:
        await engine.chat_completions(msgs)
    assert e5.value.status_code == 503 and "overloaded" in str(e5.value)
    with pytest.raises(EngineRequestError) as e4:
        await engine.chat_completions(msgs)
    assert e4.value.status_code == 400 and str(e4.value) == "bad temperature"
    with pytest.raises(EngineError) as et:
        await engine.chat_completions(msgs)
    assert et.value.status_code == 504
    await engine.aclose()
    dead = OpenAICompatEngine("http://127.0.0.1:9", model="m", timeout=2)
    with pytest.raises(EngineError, match="unreachable"):
        await dead.chat_completions(msgs)
    await dead.aclose()


def test_factory() -> None:
    engine = make_chat_engine("http://127.0.0.1:8000/v1", model="p")
    assert isinstance(engine, OpenAICompatEngine) and engine.model == "p"
    assert engine.base_url == "http://127.0.0.1:8000/v1"
    with pytest.raises(ValueError, match="engine spec"):
        make_chat_engine("ftp://nope")
