"""A tiny random Llama (2 layers, hidden 64) and a tiny byte-level BPE tokenizer with ChatML
special tokens and OpenForge's tool template: a policy that costs nothing to build or run,
for tests and benchmarks that measure plumbing, not learning."""

from __future__ import annotations

from typing import Any

import torch

from training.engines.local.chat_template import CHATML_TOOLS_TEMPLATE

TINY_CORPUS = [
    "hello world the quick brown fox jumps over the lazy dog",
    '<tool_call>\n{"name": "list_files", "arguments": {"path": "/tmp"}}\n</tool_call>',
    "system user assistant tool what is the answer? the answer is 42.",
    "You are a helpful assistant. List the files in the directory, please.",
]


def build_tiny_tokenizer() -> Any:
    """A byte-level BPE with ChatML special tokens and OpenForge's tool template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(TINY_CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", bos_token="<|im_start|>", pad_token="<|im_end|>"
    )
    fast.chat_template = CHATML_TOOLS_TEMPLATE
    return fast


def build_tiny_model(vocab_size: int, seed: int = 0, max_len: int = 512) -> Any:
    """The tiny random Llama (seeded), in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # livelier logits (entropy ~4.9 nats of 6): fewer near-ties, varied samples
        model.lm_head.weight.mul_(10)
    return model.eval()
