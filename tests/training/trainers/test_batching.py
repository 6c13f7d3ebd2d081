"""The LM head applied to response positions only equals the full-logits computation."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from training.trainers.local import batching
from training.trainers.local.batching import collate, response_logprobs


def _assert_same_logprobs_and_grads(batch: batching.Batch, reference: batching.Batch) -> torch.nn.Module:
    """Fresh tiny models (same seed) give ``batch`` the masked response logprobs and every
    parameter gradient of ``reference``, and the logprobs are not all zero; returns the model
    that scored ``batch``."""
    results, models = [], []
    for b in (batch, reference):
        model = _tiny_llama().train()
        models.append(model)
        logp = response_logprobs(model, b)
        (logp * b.mask).sum().backward()
        results.append((logp.detach() * b.mask, {n: p.grad.clone() for n, p in model.named_parameters()}))
    (lp, grads), (lp_ref, grads_ref) = results
    assert torch.allclose(lp, lp_ref, atol=1e-5)
    assert lp.abs().sum() > 0
    for name, grad in grads_ref.items():
        assert torch.allclose(grads[name], grad, atol=1e-5, rtol=1e-4), name
    return models[0]


def test_response_only_head_matches_full_logits(monkeypatch) -> None:
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)).eval()
    batch = collate([[1, 5, 7, 9, 11, 3], [4, 2]], [[8, 6, 5], [9, 9, 9, 9]], [[1, 1, 1], [1, 0, 1, 1]], pad_id=0)
    with torch.no_grad():
        fast = response_logprobs(model, batch)
        monkeypatch.setattr(batching, "_PLAIN_HEAD_MODELS", frozenset())
        full = response_logprobs(model, batch)
    assert torch.allclose(fast, full, atol=1e-5)


def _tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128))


def test_a_shared_head_run_once_gives_the_same_logprobs_and_gradients(monkeypatch) -> None:
    """A GRPO group's rows share their prompt: running it once and broadcasting its KV cache is
    exact, for the logprobs and for every parameter's gradient (which flows back through the
    broadcast into the head)."""
    head = [1, 5, 7, 9, 11, 3, 13, 17, 19, 23]
    prompts = [head + [30], head + [30], head + [31, 32, 33]]
    responses = [[8, 6, 5], [9, 9, 9, 9, 40], [41, 42]]
    masks = [[1, 1, 1], [1, 0, 1, 1, 1], [1, 1]]
    shared = collate(prompts, responses, masks, pad_id=0)
    plain = collate(prompts, responses, masks, pad_id=0, share_head=False)
    assert shared.shared == len(head) and plain.shared == 0
    assert shared.n_tokens == plain.n_tokens - 2 * len(head)  # tokens run through the model
    for plain_head_models in (batching._PLAIN_HEAD_MODELS, frozenset()):  # response-only head and full logits
        monkeypatch.setattr(batching, "_PLAIN_HEAD_MODELS", plain_head_models)
        _assert_same_logprobs_and_grads(shared, plain)


def test_no_head_is_shared_when_the_prompts_differ_from_the_first_token_or_a_row_is_alone() -> None:
    assert collate([[1, 2, 3], [4, 2, 3]], [[5], [6]], [[1], [1]], pad_id=0).shared == 0
    assert collate([[1, 2, 3]], [[5]], [[1]], pad_id=0).shared == 0
    # never the whole shortest prompt: its last position scores the first response token
    assert collate([[1, 2, 3], [1, 2, 3]], [[5], [6]], [[1], [1]], pad_id=0).shared == 2


def test_only_trained_positions_are_scored_and_they_equal_a_full_forward() -> None:
    """Tool results inside a response (mask 0) go through the model as context but not through
    the LM head: the trained positions' logprobs — under temperature / top-p / top-k — and the
    gradients equal a plain full-logits reference; the masked positions read 0."""
    prompts, responses = [[1, 5, 7, 9], [4, 2]], [[8, 6, 5, 3, 2], [9, 9, 9, 9]]
    masks = [[1, 0, 0, 1, 1], [1, 0, 1, 1]]
    sampling = [(0.7, 0.9, 0), (1.3, 1.0, 20)]
    batch = collate(prompts, responses, masks, pad_id=0, sampling=sampling)
    model = _tiny_llama().train()
    logp = response_logprobs(model, batch)
    (logp * batch.mask).sum().backward()
    fast_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    total = torch.zeros(())
    expected = []
    for p, r, m, (temp, top_p, top_k) in zip(prompts, responses, masks, sampling, strict=True):
        logits = model(input_ids=torch.tensor([p + r])).logits[0, len(p) - 1: len(p) - 1 + len(r)] / temp
        row = []
        for k, tok in enumerate(r):
            lp = torch.log_softmax(logits[k], -1)
            keep = torch.ones_like(lp, dtype=torch.bool)
            if top_k:
                keep &= lp >= torch.topk(lp, top_k).values[-1]
            if top_p < 1.0:
                sorted_lp, order = torch.sort(lp.detach().masked_fill(~keep, float("-inf")), descending=True)
                probs = sorted_lp.exp()
                inside = torch.zeros_like(keep).scatter_(0, order, (torch.cumsum(probs, 0) - probs) < top_p)
                keep &= inside
            keep[tok] = True
            value = torch.log_softmax(lp.masked_fill(~keep, float("-inf")), -1)[tok]
            row.append(float(value) if m[k] else 0.0)
            total = total + value * m[k]
        expected.append(row)
    total.backward()
    for b, row in enumerate(expected):
        assert torch.allclose(logp[b, : len(row)].detach(), torch.tensor(row), atol=1e-5)
    for name, p in model.named_parameters():
        assert torch.allclose(fast_grads[name], p.grad, atol=1e-5, rtol=1e-4), name


def test_a_packed_micro_batch_equals_padded_rows_in_logprobs_and_gradients(monkeypatch) -> None:
    """The packed layout (head once, then each sequence's rest, one row, attention per
    sequence) gives the logprobs and every parameter's gradient of the padded rows, for
    sequences of unequal length, a masked tool result, sampling per sequence, and a sequence
    whose prompt is the head only; it runs fewer tokens than the padded layout."""
    head = [1, 5, 7, 9, 11, 3, 13, 17, 19, 23]
    prompts = [head + [30], head + [30, 31, 32, 33, 34, 35], head + [31, 32, 33], head + [44]]
    responses = [[8, 6, 5], [9, 9, 9, 9, 40], [41, 42, 43, 44, 45, 46, 47], [50]]
    masks = [[1, 1, 1], [1, 0, 0, 1, 1], [1, 1, 0, 0, 1, 1, 1], [1]]
    sampling = [(0.8, 1.0, 0), (0.7, 0.9, 0), (1.3, 1.0, 20), (1.0, 1.0, 0)]
    packed = collate(prompts, responses, masks, pad_id=0, sampling=sampling, pack=True)
    padded = collate(prompts, responses, masks, pad_id=0, sampling=sampling, share_head=False)
    assert packed.packed and packed.shared == len(head) and packed.input_ids.shape[0] == 1
    assert packed.n_tokens == sum(len(p) + len(r) for p, r in zip(prompts, responses)) - 3 * len(head)
    assert packed.n_tokens < padded.input_ids.numel()
    model = _assert_same_logprobs_and_grads(packed, padded)
    # the attention choice is the model's again after the pass
    assert model.config._attn_implementation != "openforge_packed"


def test_packed_attention_refuses_a_pass_that_bypassed_it() -> None:
    """A model whose layers do not go through transformers' attention interface would attend
    across the packed sequences; the pass is refused instead of trained on."""
    from training.trainers.local.packed_attention import PackedLayout, packed_forward

    model = _tiny_llama()
    with pytest.raises(RuntimeError, match="packed attention ran in 0 of 2 layers"):
        with packed_forward(model.get_decoder(), PackedLayout(2, (3,))):
            pass  # no forward pass through the attention interface


def test_an_architecture_without_a_plain_head_is_not_packed() -> None:
    model = _tiny_llama()
    assert batching.packable(model)
    model.config.model_type = "gemma2"  # soft-capped logits: not in the packable set
    assert not batching.packable(model)
    batch = collate([[1, 2, 3], [1, 2, 4]], [[5], [6]], [[1], [1]], pad_id=0, pack=True)
    with pytest.raises(ValueError, match="'gemma2' is not an architecture the packed layout supports"):
        response_logprobs(model, batch)
