"""LocalEngine on the real default model (SmolLM2-135M-Instruct, converted once per machine).

~12 s on 2 idle cores once the shared copy exists; the first run on a machine also pays the
one-time conversion (~1-2 min)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from training.engines.local import LocalEngine


@pytest.fixture(scope="module")
def smollm_engine(smollm_dir: Path):
    # the model's own 8k window: these tests are about the engine's mechanics, and the default
    # 32k YaRN extension changes greedy answers on short prompts (issue 13 note; bench/context.py)
    engine = LocalEngine(str(smollm_dir), max_batch_size=4, seed=0, context_length=8192)
    yield engine
    engine.close()


def _chat(engine: LocalEngine, body: dict) -> dict:
    return asyncio.run(engine.chat_completions({"return_token_ids": True, "logprobs": True, **body}))


def test_answers_a_simple_question_and_ends_its_turn(smollm_engine: LocalEngine) -> None:
    out = _chat(smollm_engine, {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                                "max_tokens": 24, "temperature": 0})
    choice = out["choices"][0]
    assert "Paris" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    assert choice["token_ids"][-1] == smollm_engine.tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompt = smollm_engine.tokenizer.decode(out["prompt_token_ids"])
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")


def test_sampled_logprobs_match_a_teacher_forced_pass(smollm_engine: LocalEngine) -> None:
    out = _chat(smollm_engine, {"messages": [{"role": "user", "content": "Tell me a story about a robot."}],
                                "max_tokens": 16, "temperature": 1.0, "seed": 5})
    choice = out["choices"][0]
    ids = torch.tensor([out["prompt_token_ids"] + choice["token_ids"]])
    with smollm_engine._batcher.weights_lock, torch.no_grad():
        logits = smollm_engine.model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    start = len(out["prompt_token_ids"]) - 1
    expected = [float(logp[start + t, tok]) for t, tok in enumerate(choice["token_ids"])]
    assert [e["logprob"] for e in choice["logprobs"]["content"]] == pytest.approx(expected, abs=1e-3)


def test_tools_and_tool_history_render_through_the_saved_template(smollm_engine: LocalEngine) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"},
    ]
    out = _chat(smollm_engine, {"messages": messages, "tools": tools, "max_tokens": 24, "temperature": 0})
    prompt = smollm_engine.tokenizer.decode(out["prompt_token_ids"])
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in prompt
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>' in prompt
    assert "<tool_response>\nsunny, 21C\n</tool_response>" in prompt
    choice = out["choices"][0]
    assert choice["finish_reason"] in {"stop", "length", "tool_calls"}
    assert choice["message"]["content"] or choice["message"].get("tool_calls")
