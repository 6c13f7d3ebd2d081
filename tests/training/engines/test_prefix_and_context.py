"""Prefix KV reuse gives the same logprobs as a cold prefill, and the context extension (YaRN)
sets the served window, leaves other models alone and is what a trainer copying the model sees."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig

from training.engines.local import LocalEngine
from training.engines.local.context import (
    ContextExtensionError,
    extend_context,
    trained_window,
)
from training.engines.local.prefix_cache import PrefixCache, common_prefix

from .test_local_engine import body, teacher_forced

HEAD = "You are a helpful assistant. List the files in the directory, please. " * 6


@pytest.fixture
async def cached_engine(tiny_model_dir: Path):
    eng = LocalEngine(str(tiny_model_dir), max_batch_size=8, seed=0)
    eng._batcher.prefix_cache = PrefixCache(max_tokens=4096, min_match=32)  # the tiny prompts are short
    yield eng
    await eng.aclose()


async def test_a_shared_head_is_reused_and_logprobs_match_a_cold_prefill(cached_engine: LocalEngine,
                                                                          tiny_model_dir: Path) -> None:
    first = [{"role": "system", "content": HEAD}, {"role": "user", "content": "what is the answer?"}]
    await cached_engine.chat_completions(body(first, max_tokens=4, temperature=0))
    assert cached_engine.stats.prefix_reused_tokens == 0
    later = [*first, {"role": "assistant", "content": "the answer is"}, {"role": "user", "content": "hello world"}]
    out = await cached_engine.chat_completions(body(later, max_tokens=16, temperature=0.7, seed=5))
    reused = cached_engine.stats.prefix_reused_tokens
    assert reused >= 32 and reused < len(out["prompt_token_ids"])
    choice = out["choices"][0]
    expected = teacher_forced(tiny_model_dir, out["prompt_token_ids"], choice["token_ids"], 0.7)
    assert [e["logprob"] for e in choice["logprobs"]["content"]] == pytest.approx(expected, abs=2e-4)


async def test_identical_prompts_waiting_together_are_prefilled_once_and_feed_the_prefix_cache(
        cached_engine: LocalEngine, tiny_model_dir: Path) -> None:
    """A GRPO group's first calls (one task, one harness: the same prompt) cost one prefill,
    and the next call of each rollout reuses that prompt's KV."""
    import asyncio

    first = [{"role": "system", "content": HEAD}, {"role": "user", "content": "what is the answer?"}]
    stats = cached_engine.stats
    with cached_engine._batcher.weights_lock:  # hold the worker so the four wait together
        calls = [asyncio.create_task(cached_engine.chat_completions(body(first, max_tokens=4, temperature=0.9, seed=i)))
                 for i in range(4)]
        while stats.requests_submitted < 4:
            await asyncio.sleep(0.005)
    outs = [await c for c in calls]
    prompt_len = len(outs[0]["prompt_token_ids"])
    assert stats.prompt_tokens == 4 * prompt_len
    assert stats.prefilled_tokens < 2 * prompt_len, "identical waiting prompts were prefilled more than once"
    for i, out in enumerate(outs):  # each row still samples on its own, from the right distribution
        choice = out["choices"][0]
        expected = teacher_forced(tiny_model_dir, out["prompt_token_ids"], choice["token_ids"], 0.9)
        assert [e["logprob"] for e in choice["logprobs"]["content"]] == pytest.approx(expected, abs=2e-4), i
    later = [*first, {"role": "assistant", "content": "the answer is"}, {"role": "user", "content": "hello world"}]
    before = stats.prefix_reused_tokens
    await cached_engine.chat_completions(body(later, max_tokens=2, temperature=0))
    assert stats.prefix_reused_tokens - before >= prompt_len - 1


async def test_different_prompts_waiting_together_reuse_the_head_they_share(
        cached_engine: LocalEngine, tiny_model_dir: Path) -> None:
    """An evaluation's first calls (different tasks, one harness: the same system prompt, a
    different question) and the rollouts' next calls (each extends its own previous prompt)
    arrive together: the shared head is run through the model once, not once per prompt, and
    every row still samples from the right distribution."""
    import asyncio

    questions = [f"question number {i}: what is {i} plus {i}?" for i in range(4)]
    prompts = [[{"role": "system", "content": HEAD}, {"role": "user", "content": q}] for q in questions]
    stats = cached_engine.stats
    with cached_engine._batcher.weights_lock:  # hold the worker so the four wait together
        calls = [asyncio.create_task(cached_engine.chat_completions(body(p, max_tokens=4, temperature=0.8, seed=i)))
                 for i, p in enumerate(prompts)]
        while stats.requests_submitted < 4:
            await asyncio.sleep(0.005)
    outs = [await c for c in calls]
    lengths = [len(o["prompt_token_ids"]) for o in outs]
    head = common_prefix(outs[0]["prompt_token_ids"], outs[1]["prompt_token_ids"])
    assert head > lengths[0] // 2  # the system prompt is most of each prompt
    assert stats.prompt_tokens == sum(lengths)
    assert stats.prefilled_tokens < sum(lengths) - 2 * head, "the shared head was prefilled more than once"
    assert stats.prefix_reused_tokens >= 3 * head
    for i, out in enumerate(outs):
        choice = out["choices"][0]
        expected = teacher_forced(tiny_model_dir, out["prompt_token_ids"], choice["token_ids"], 0.8)
        assert [e["logprob"] for e in choice["logprobs"]["content"]] == pytest.approx(expected, abs=2e-4), i


async def test_a_weights_update_invalidates_the_stored_prefixes(cached_engine: LocalEngine) -> None:
    msgs = [{"role": "system", "content": HEAD}, {"role": "user", "content": "hi"}]
    await cached_engine.chat_completions(body(msgs, max_tokens=2, temperature=0))
    cached_engine.update_weights(copy.deepcopy(cached_engine.model.state_dict()))
    await cached_engine.chat_completions(body(msgs, max_tokens=2, temperature=0))
    assert cached_engine.stats.prefix_reused_tokens == 0


def test_prefix_cache_keeps_to_its_token_budget() -> None:
    cache = PrefixCache(max_tokens=100, min_match=4)
    kv = [(torch.zeros(1, 1, 60, 2), torch.zeros(1, 1, 60, 2))]
    cache.store(list(range(60)), kv, 0)
    cache.store(list(range(100, 160)), kv, 0)  # over budget: the older entry goes
    assert cache.tokens == 60
    assert cache.lookup(list(range(10)), 0) is None
    hit = cache.lookup([*range(100, 150), 7], 0)
    assert hit is not None and hit[0] == 50 and hit[1][0][0].shape[2] == 50
    assert cache.lookup([*range(100, 150), 7], 1) is None  # another policy version


def test_extend_context_sets_yarn_and_the_window(tiny_model_dir: Path) -> None:
    config = AutoConfig.from_pretrained(tiny_model_dir)
    window = config.max_position_embeddings
    rope = extend_context(config, window * 4)
    assert rope is not None and rope["rope_type"] == "yarn" and rope["factor"] == 4.0
    assert config.max_position_embeddings == window * 4 and trained_window(config) == window
    assert extend_context(config, window * 4) is None  # already served: unchanged
    with pytest.raises(ContextExtensionError):
        extend_context(config, window * 8)  # a YaRN config is not extended again


async def test_engine_serves_the_extended_window_and_a_model_copy_agrees(tiny_model_dir: Path) -> None:
    plain = LocalEngine(str(tiny_model_dir))
    wide = LocalEngine(str(tiny_model_dir), context_length=plain.max_model_len * 4)
    try:
        assert plain.context_extension is None
        assert wide.max_model_len == plain.max_model_len * 4
        assert wide.context_extension is not None and wide.context_extension["rope_type"] == "yarn"
        long_prompt = [{"role": "user", "content": "hello world " * (plain.max_model_len // 2)}]
        out = await wide.chat_completions(body(long_prompt, max_tokens=6, temperature=1.0, seed=2))
        prompt, response = out["prompt_token_ids"], out["choices"][0]["token_ids"]
        assert len(prompt) > plain.max_model_len
        trainer_copy = copy.deepcopy(wide.model)  # what the RL workflow trains
        with torch.no_grad():
            logits = trainer_copy(input_ids=torch.tensor([prompt + response])).logits[0]
        logp = torch.log_softmax(logits.float(), dim=-1)
        expected = [float(logp[len(prompt) - 1 + t, tok]) for t, tok in enumerate(response)]
        recorded = [e["logprob"] for e in out["choices"][0]["logprobs"]["content"]]
        assert recorded == pytest.approx(expected, abs=2e-4)
    finally:
        await plain.aclose()
        await wide.aclose()
