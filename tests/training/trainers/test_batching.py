"""The LM head applied to response positions only equals the full-logits computation."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from training.trainers.local import batching
from training.trainers.local.batching import collate, response_logprobs


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
