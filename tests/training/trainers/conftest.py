"""Tiny randomly initialised Llama models (no downloads) for trainer tests."""

from __future__ import annotations

import pytest
import torch


def make_tiny_llama(seed: int = 0, vocab: int = 32):  # noqa: ANN201
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, eos_token_id=2, bos_token_id=1,
    )
    return LlamaForCausalLM(cfg)


@pytest.fixture
def tiny_llama():  # noqa: ANN201
    return make_tiny_llama()


@pytest.fixture(autouse=True)
def _few_threads():  # noqa: ANN202
    """Stay polite on shared 2-core machines."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
