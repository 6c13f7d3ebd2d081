"""LocalEngine on a tiny random Llama: wire format, logprobs, batching, stops, limits,
weight updates and tool calls."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from training.engines.base import ChatEngine, EngineRequestError
from training.engines.local import LocalEngine

from .conftest import build_tiny_model

USER = [{"role": "user", "content": "hello world, what is the answer?"}]


def body(messages=None, **kw):
    return {"model": "tiny", "messages": messages or USER, "return_token_ids": True, "logprobs": True, **kw}


@pytest.fixture
async def engine(tiny_model_dir: Path):
    eng = LocalEngine(str(tiny_model_dir), max_batch_size=8, seed=0)
    yield eng
    await eng.aclose()


def teacher_forced(model_dir: Path, prompt: list[int], response: list[int], temperature: float = 1.0) -> list[float]:
    """log p(response_t | prompt, response_<t) at ``temperature``, from one full forward pass."""
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    start = len(prompt) - 1
    return [float(logp[start + t, tok]) for t, tok in enumerate(response)]


async def test_is_a_chat_engine_and_answers_in_vllm_wire_format(engine: LocalEngine) -> None:
    assert isinstance(engine, ChatEngine)
    assert await engine.list_models() == [engine.model_name]
    out = await engine.chat_completions(body(max_tokens=7, temperature=0))
    choice = out["choices"][0]
    assert out["object"] == "chat.completion" and out["model"] == "tiny"
    assert isinstance(out["prompt_token_ids"], list) and out["prompt_token_ids"]
    assert len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == 7
    assert choice["finish_reason"] == "length"
    assert all(entry["logprob"] <= 0 for entry in choice["logprobs"]["content"])
    assert out["usage"] == {"prompt_tokens": len(out["prompt_token_ids"]), "completion_tokens": 7,
                            "total_tokens": len(out["prompt_token_ids"]) + 7}
    assert out["policy_version"] == 0 and engine.policy_version == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == engine.tokenizer.decode(choice["token_ids"], skip_special_tokens=True)
    # the prompt is the chat template's rendering of the messages
    rendered = engine.tokenizer.apply_chat_template(USER, tokenize=False, add_generation_prompt=True)
    assert engine.tokenizer.decode(out["prompt_token_ids"]) == rendered


async def test_ids_and_logprobs_only_when_asked(engine: LocalEngine) -> None:
    out = await engine.chat_completions({"messages": USER, "max_tokens": 3})
    assert "prompt_token_ids" not in out and "token_ids" not in out["choices"][0]
    assert out["choices"][0]["logprobs"] is None
    top = await engine.chat_completions(body(max_tokens=2, top_logprobs=3, temperature=0))
    entry = top["choices"][0]["logprobs"]["content"][0]
    assert len(entry["top_logprobs"]) == 3
    assert entry["top_logprobs"][0]["logprob"] == pytest.approx(entry["logprob"])  # greedy picks the top one


@pytest.mark.parametrize("temperature", [1.0, 0.7])
async def test_logprobs_match_teacher_forced_recomputation(engine: LocalEngine, tiny_model_dir: Path, temperature: float) -> None:
    out = await engine.chat_completions(body(max_tokens=24, temperature=temperature, seed=3))
    choice = out["choices"][0]
    recorded = [entry["logprob"] for entry in choice["logprobs"]["content"]]
    expected = teacher_forced(tiny_model_dir, out["prompt_token_ids"], choice["token_ids"], temperature)
    assert recorded == pytest.approx(expected, abs=2e-4)


async def test_seed_makes_sampling_reproducible_and_n_gives_distinct_choices(engine: LocalEngine) -> None:
    first = await engine.chat_completions(body(max_tokens=12, temperature=1.0, seed=11, n=3))
    again = await engine.chat_completions(body(max_tokens=12, temperature=1.0, seed=11, n=3))
    ids = [c["token_ids"] for c in first["choices"]]
    assert [c["index"] for c in first["choices"]] == [0, 1, 2]
    assert ids == [c["token_ids"] for c in again["choices"]]
    assert len({tuple(i) for i in ids}) > 1
    assert first["usage"]["completion_tokens"] == sum(len(i) for i in ids)


async def test_concurrent_requests_share_forward_passes_and_match_solo_results(tiny_model_dir: Path) -> None:
    prompts = [[{"role": "user", "content": "hello " * (i * 3 + 1)}] for i in range(6)]
    solo = LocalEngine(str(tiny_model_dir), max_batch_size=1)
    try:
        alone = [await solo.chat_completions(body(p, max_tokens=10 + i, temperature=0)) for i, p in enumerate(prompts)]
    finally:
        await solo.aclose()
    batched = LocalEngine(str(tiny_model_dir), max_batch_size=8)
    try:
        together = await asyncio.gather(
            *(batched.chat_completions(body(p, max_tokens=10 + i, temperature=0)) for i, p in enumerate(prompts))
        )
        stats = batched.stats
    finally:
        await batched.aclose()
    for a, b in zip(alone, together, strict=True):
        assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]
        la = [e["logprob"] for e in a["choices"][0]["logprobs"]["content"]]
        lb = [e["logprob"] for e in b["choices"][0]["logprobs"]["content"]]
        assert la == pytest.approx(lb, abs=1e-4)
    total = sum(len(r["choices"][0]["token_ids"]) for r in together)
    assert stats.max_rows >= 4
    assert stats.decode_steps < total / 2  # sequences really shared decode steps


async def test_waiting_requests_are_prefilled_together(tiny_model_dir: Path) -> None:
    prompts = [[{"role": "user", "content": "the lazy dog " * (i * 4 + 1)}] for i in range(5)]
    engine = LocalEngine(str(tiny_model_dir), max_batch_size=8)
    try:
        solo = [(await engine.chat_completions(body(p, max_tokens=8, temperature=0, n=2)))["choices"] for p in prompts]
        passes, submitted = engine.stats.prefill_passes, engine.stats.requests_submitted
        engine._batcher.prefix_cache.clear()  # cold prompts (stored ones are each prefilled from their head)
        with engine._batcher.weights_lock:  # hold the worker at its next forward pass
            tasks = [asyncio.create_task(engine.chat_completions(body(p, max_tokens=8, temperature=0, n=2)))
                     for p in prompts]
            while engine.stats.requests_submitted < submitted + len(prompts):
                await asyncio.sleep(0.005)
        grouped = [(await t)["choices"] for t in tasks]
        # Timing decides whether the worker grabbed the first request alone before the lock; what
        # must hold is that waiting requests share prefill passes (5 requests, fewer passes).
        assert engine.stats.prefill_passes - passes < len(prompts)
    finally:
        await engine.aclose()
    for alone, together in zip(solo, grouped, strict=True):
        assert [c["token_ids"] for c in alone] == [c["token_ids"] for c in together]
        for a, b in zip(alone, together, strict=True):
            assert [e["logprob"] for e in a["logprobs"]["content"]] == pytest.approx(
                [e["logprob"] for e in b["logprobs"]["content"]], abs=1e-4)


async def test_requests_join_a_running_batch(tiny_model_dir: Path) -> None:
    """A long-prompt and a short-prompt request arrive while another one is generating."""
    engine = LocalEngine(str(tiny_model_dir), max_batch_size=8)
    short = [{"role": "user", "content": "hi"}]
    long = [{"role": "user", "content": "the quick brown fox " * 12}]
    try:
        solo = {}
        for name, msgs in (("short", short), ("long", long), ("mid", USER)):
            solo[name] = (await engine.chat_completions(body(msgs, max_tokens=30, temperature=0)))["choices"][0]["token_ids"]
        done = engine.stats.generated_tokens
        first = asyncio.create_task(engine.chat_completions(body(USER, max_tokens=30, temperature=0)))
        while engine.stats.generated_tokens < done + 4:  # the running request is a few tokens in
            await asyncio.sleep(0.002)
        late = await asyncio.gather(
            engine.chat_completions(body(long, max_tokens=30, temperature=0)),
            engine.chat_completions(body(short, max_tokens=30, temperature=0)),
        )
        mid = await first
        joined = engine.stats.max_rows
    finally:
        await engine.aclose()
    assert joined == 3, "the late requests should have joined the running one"
    assert mid["choices"][0]["token_ids"] == solo["mid"]
    assert late[0]["choices"][0]["token_ids"] == solo["long"]
    assert late[1]["choices"][0]["token_ids"] == solo["short"]


async def test_stop_strings_and_stop_token_ids(engine: LocalEngine) -> None:
    free = await engine.chat_completions(body(max_tokens=20, temperature=0, ignore_eos=True))
    ids = free["choices"][0]["token_ids"]
    text = free["choices"][0]["message"]["content"]
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    cut = await engine.chat_completions(body(max_tokens=20, temperature=0, ignore_eos=True, stop=[stop]))
    assert cut["choices"][0]["finish_reason"] == "stop"
    assert cut["choices"][0]["message"]["content"] == text[: text.find(stop)]
    assert len(cut["choices"][0]["token_ids"]) < len(ids)
    by_id = await engine.chat_completions(body(max_tokens=20, temperature=0, ignore_eos=True, stop_token_ids=[ids[3]]))
    got = by_id["choices"][0]["token_ids"]
    assert by_id["choices"][0]["finish_reason"] == "stop"
    assert got == ids[: ids.index(ids[3]) + 1]


async def test_context_overflow_is_a_request_error_and_max_tokens_is_clamped(engine: LocalEngine) -> None:
    with pytest.raises(EngineRequestError, match="context overflow") as err:
        await engine.chat_completions(body([{"role": "user", "content": "hello world " * 600}]))
    assert err.value.param == "messages"
    prompt = (await engine.chat_completions(body(max_tokens=1)))["usage"]["prompt_tokens"]
    out = await engine.chat_completions(body(max_tokens=10_000, temperature=0, ignore_eos=True))
    assert out["choices"][0]["finish_reason"] == "length"
    assert len(out["choices"][0]["token_ids"]) == engine.max_model_len - prompt


@pytest.mark.parametrize(
    ("patch", "param"),
    [({"temperature": -1}, "temperature"), ({"top_p": 0}, "top_p"), ({"n": 0}, "n"),
     ({"max_tokens": 0}, "max_tokens"), ({"stop": 3}, "stop"), ({"messages": []}, "messages"),
     ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, "messages"),
     ({"messages": [{"role": "robot", "content": "x"}]}, "messages")],
)
async def test_bad_parameters_are_request_errors(engine: LocalEngine, patch: dict, param: str) -> None:
    with pytest.raises(EngineRequestError) as err:
        await engine.chat_completions({**body(), **patch})
    assert err.value.param == param and err.value.status_code == 400


async def test_content_parts_and_developer_role_render_like_plain_text(engine: LocalEngine) -> None:
    plain = await engine.chat_completions(body([{"role": "system", "content": "be brief"}, *USER], max_tokens=1))
    parts = await engine.chat_completions(
        body([{"role": "developer", "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}]},
              {"role": "user", "content": [{"type": "text", "text": USER[0]["content"]}]}], max_tokens=1)
    )
    assert plain["prompt_token_ids"] == parts["prompt_token_ids"]


async def test_event_loop_stays_responsive_while_generating(engine: LocalEngine) -> None:
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    # long enough to span many ticks however fast the engine is (4 distinct prompts, no early stop)
    await asyncio.gather(*(engine.chat_completions(body([{"role": "user", "content": "hello " * (i + 1)}],
                                                        max_tokens=200, temperature=1.0, ignore_eos=True))
                           for i in range(4)))
    tick.cancel()
    assert len(gaps) > 5 and max(gaps) < 1.0


async def test_cancelled_request_leaves_the_batch(engine: LocalEngine) -> None:
    doomed = asyncio.create_task(engine.chat_completions(body(max_tokens=200, temperature=1.0, ignore_eos=True)))
    while engine.stats.generated_tokens < 3:
        await asyncio.sleep(0.005)
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    out = await engine.chat_completions(body(max_tokens=5, temperature=0))
    assert len(out["choices"][0]["token_ids"]) == 5
    assert engine.stats.generated_tokens < 150  # the cancelled one stopped early


async def test_update_weights_swaps_weights_and_bumps_policy_version(engine: LocalEngine, tiny_model_dir: Path, tmp_path: Path) -> None:
    before = await engine.chat_completions(body(max_tokens=8, temperature=0))
    other = build_tiny_model(engine.model.config.vocab_size, seed=1)
    assert engine.update_weights(other.state_dict()) == 1
    after = await engine.chat_completions(body(max_tokens=8, temperature=0))
    assert after["policy_version"] == 1
    assert after["choices"][0]["token_ids"] != before["choices"][0]["token_ids"]
    # from a module and from a checkpoint folder: back to the original weights
    assert await engine.aupdate_weights(str(tiny_model_dir)) == 2
    again = await engine.chat_completions(body(max_tokens=8, temperature=0))
    assert again["choices"][0]["token_ids"] == before["choices"][0]["token_ids"]
    assert engine.update_weights(other) == 3
    with pytest.raises(ValueError, match="does not fit"):
        engine.update_weights({"nonsense.weight": torch.zeros(1)})
    assert engine.policy_version == 3


def _overfit(model, prompt_ids: list[int], target_ids: list[int], steps: int = 50) -> None:
    """Teach the tiny model to answer ``prompt_ids`` with ``target_ids`` (plain next-token CE)."""
    model.train()
    ids = torch.tensor([prompt_ids + target_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        optimizer.zero_grad()
        model(input_ids=ids, labels=labels).loss.backward()
        optimizer.step()
    model.eval()


TOOLS = [{"type": "function", "function": {"name": "list_files", "description": "List files",
                                             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


async def test_tool_calls_render_and_parse_end_to_end(engine: LocalEngine) -> None:
    request = body([{"role": "user", "content": "List the files in /tmp"}], tools=TOOLS, max_tokens=60, temperature=0)
    first = await engine.chat_completions(request)
    prompt_text = engine.tokenizer.decode(first["prompt_token_ids"])
    assert '"name": "list_files"' in prompt_text and "<tools>" in prompt_text
    call = '<tool_call>\n{"name": "list_files", "arguments": {"path": "/tmp"}}\n</tool_call>'
    target = engine.tokenizer(call + "<|im_end|>", add_special_tokens=False)["input_ids"]
    trained = build_tiny_model(engine.model.config.vocab_size)
    trained.load_state_dict(engine.model.state_dict())
    _overfit(trained, first["prompt_token_ids"], target)
    engine.update_weights(trained)
    out = await engine.chat_completions(request)
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    assert choice["message"]["content"] is None
    (tool_call,) = choice["message"]["tool_calls"]
    assert tool_call["type"] == "function" and tool_call["id"].startswith("call_")
    assert tool_call["function"]["name"] == "list_files"
    assert json.loads(tool_call["function"]["arguments"]) == {"path": "/tmp"}
    assert choice["token_ids"] == target  # the end-of-turn token is part of the response ids
    # with tool_choice "none" the same output stays plain content
    plain = await engine.chat_completions({**request, "tool_choice": "none"})
    assert plain["choices"][0]["finish_reason"] == "stop"
    assert plain["choices"][0]["message"]["content"].startswith("<tool_call>")
    # the call replayed as history renders back into the prompt exactly as generated
    history = [*request["messages"], {"role": "assistant", "content": None, "tool_calls": choice["message"]["tool_calls"]},
               {"role": "tool", "tool_call_id": tool_call["id"], "content": "a.txt"}]
    follow = await engine.chat_completions({**request, "messages": history, "max_tokens": 1})
    assert follow["prompt_token_ids"][: len(first["prompt_token_ids"]) + len(target)] == first["prompt_token_ids"] + target


async def test_engine_runs_its_forward_passes_with_its_own_thread_count(tiny_model_dir: Path) -> None:
    """``threads`` is the worker's own (torch's thread count is per thread): the engine's
    passes use it and the caller's thread keeps its count for the trainer."""
    before = torch.get_num_threads()
    target = 1 if before > 1 else 2
    engine = LocalEngine(str(tiny_model_dir), max_batch_size=2, threads=target)
    try:
        await engine.chat_completions(body([{"role": "user", "content": "hello"}], max_tokens=2, temperature=0))
        assert engine._batcher.stats.threads == target
        assert torch.get_num_threads() == before
    finally:
        await engine.aclose()


async def test_a_serving_engine_holds_its_cores_and_gives_them_back_when_idle(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine announces the cores it computes on while it has work (training.cpu.CoreClaim),
    so a trainer stepping beside an evaluation sizes its threads to the rest; idle, it holds none."""
    import training.cpu as cpu

    monkeypatch.setattr(cpu, "available_cores", lambda: 4)
    probe = cpu.CoreClaim()  # what another worker of the process (a trainer) would be left
    engine = LocalEngine(str(tiny_model_dir), max_batch_size=2, threads=1)
    seen: list[int] = []
    batcher = engine._batcher
    real_decode = batcher._decode

    def decode() -> None:
        seen.append(probe.left())
        real_decode()

    batcher._decode = decode  # type: ignore[method-assign]
    try:
        await engine.chat_completions(body([{"role": "user", "content": "hello"}], max_tokens=3, temperature=0))
        assert seen and set(seen) == {3}  # the engine held its one core through every decode step
        for _ in range(200):  # the worker releases as it goes idle, just after answering
            if probe.left() == 4:
                break
            await asyncio.sleep(0.01)
        assert probe.left() == 4
    finally:
        await engine.aclose()
    assert probe.left() == 4
