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


def tiny_llama(seed: int = 0, vocab: int = 32, *, hidden: int = 32, layers: int = 2, heads: int = 4, kv_heads: int = 2,
               intermediate: int = 64, max_len: int = 128, tied: bool = False) -> Any:
    """A seeded random Llama for trainer maths (default: hidden 32, 2 layers, untied head), in
    training mode; the shape and a tied head are arguments so a GPU check can run the same
    model at a production shape."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=max_len, pad_token_id=0,
        eos_token_id=2, bos_token_id=1, tie_word_embeddings=tied,
    ))


def engine_sampled(model: Any, prompt: list[int], n_tokens: int, temperature: float, top_p: float, top_k: int,
                   seed: int, device: torch.device | str = "cpu") -> tuple[list[int], list[float]]:
    """``n_tokens`` tokens after ``prompt`` and their logprobs, drawn exactly as the local engine
    draws them (its ``choose_tokens``, one full forward pass per token)."""
    from training.engines.local.sampling import RowSampler, choose_tokens

    gen = torch.Generator(device=device).manual_seed(seed)
    ids, lps = list(prompt), []
    with torch.no_grad():
        for _ in range(n_tokens):
            logits = model(input_ids=torch.tensor([ids], device=device)).logits[:, -1, :]
            choice = choose_tokens(logits, [RowSampler(temperature, top_p, top_k, 0, gen)], gen)[0]
            ids.append(choice.token)
            lps.append(choice.logprob)
    return ids[len(prompt):], lps


def sampled_group(model: Any, temperature: float, top_p: float = 1.0, top_k: int = 0, *,
                  rewards: tuple[float, ...] = (1.0, 0.0, 0.5), prompt: tuple[int, ...] = (1, 3, 4), n_tokens: int = 6,
                  device: torch.device | str = "cpu") -> list[Any]:
    """One GRPO group: a rollout per reward, each one call of ``n_tokens`` tokens drawn from
    ``model`` by the engine's sampler (:func:`engine_sampled`, seed = the rollout's index),
    recorded with its sampling parameters, reconstructed and given group advantages — the
    samples a trainer gets for a first-epoch ratio check."""
    from testkit.calls import chat_call, rollout
    from training.trajectory import assign_group_advantages, build_trajectory

    request = {"messages": [], "temperature": temperature, "top_p": top_p, **({"top_k": top_k} if top_k else {})}
    trajs = []
    for i, reward in enumerate(rewards):
        response, lps = engine_sampled(model, list(prompt), n_tokens, temperature, top_p, top_k, seed=i, device=device)
        call = {**chat_call(0, list(prompt), response, logprobs=lps), "request": request}
        trajs.append(build_trajectory(rollout(f"r{i}", reward=reward), [call]))
    return assign_group_advantages(trajs)[0]
