"""Micro-batches of samples → padded tensors, and per-token logprobs of the responses.

A sequence is ``prompt_ids + response_ids``, right-padded to the longest in the
micro-batch. Response-aligned tensors are [B, R]; the model's logits at position j predict
token j+1, so response token k of a sequence with prompt length P is scored by the logits
at P − 1 + k.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] long
    attention_mask: torch.Tensor  # [B, L] long
    response_index: torch.Tensor  # [B, R] long: position in input_ids of response token k
    response_ids: torch.Tensor  # [B, R] long
    mask: torch.Tensor  # [B, R] float: 1 on trained tokens

    @property
    def n_tokens(self) -> int:
        return int(self.attention_mask.sum())


def truncate(
    prompt: Sequence[int], response: Sequence[int], max_prompt: int, max_response: int
) -> tuple[list[int], slice]:
    """Keep the last ``max_prompt`` prompt tokens and the first ``max_response`` response
    tokens; returns the prompt and the slice of the response kept."""
    return list(prompt[-max_prompt:]), slice(0, min(len(response), max_response))


def collate(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    masks: Sequence[Sequence[float]],
    pad_id: int,
    device: torch.device | str = "cpu",
) -> Batch:
    """Right-padded tensors for one micro-batch."""
    n = len(prompts)
    seq_len = max(len(p) + len(r) for p, r in zip(prompts, responses, strict=True))
    resp_len = max(1, max(len(r) for r in responses))
    input_ids = torch.full((n, seq_len), pad_id, dtype=torch.long)
    attention = torch.zeros((n, seq_len), dtype=torch.long)
    index = torch.zeros((n, resp_len), dtype=torch.long)
    resp = torch.full((n, resp_len), pad_id, dtype=torch.long)
    mask = torch.zeros((n, resp_len), dtype=torch.float32)
    for b, (p, r, m) in enumerate(zip(prompts, responses, masks, strict=True)):
        seq = list(p) + list(r)
        input_ids[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[b, : len(seq)] = 1
        if r:
            index[b, : len(r)] = torch.arange(len(p) - 1, len(p) - 1 + len(r))
            resp[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
            mask[b, : len(r)] = torch.tensor(list(m), dtype=torch.float32)
    return Batch(input_ids.to(device), attention.to(device), index.to(device), resp.to(device), mask.to(device))


#: Architectures whose logits are exactly ``lm_head(last hidden state)`` (no soft-capping or
#: scaling after the head), so the head may be applied to the response positions alone.
_PLAIN_HEAD_MODELS = frozenset({"llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "smollm3"})


def _response_scores(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """Logits that predict each response token, [B, R, V].

    Agent prompts are long (system prompt, tool schemas, history) and responses short, so
    when the architecture allows it only the response positions go through the LM head:
    the [B, L, V] logits tensor (GBs for a 49k vocabulary) is never built.
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and getattr(model.config, "model_type", None) in _PLAIN_HEAD_MODELS:
        hidden = model.get_decoder()(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
        idx = batch.response_index.unsqueeze(-1).expand(-1, -1, hidden.size(-1))  # [B, R, H]
        return head(torch.gather(hidden, 1, idx)).float()
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # [B, L, V]
    idx = batch.response_index.unsqueeze(-1).expand(-1, -1, logits.size(-1))  # [B, R, V]
    return torch.gather(logits, 1, idx).float()


def response_logprobs(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """log π(response token k) for every sequence, [B, R] (garbage where mask = 0)."""
    scores = _response_scores(model, batch)  # [B, R, V] logits that predict each response token
    chosen = torch.gather(scores, 2, batch.response_ids.unsqueeze(-1)).squeeze(-1)  # [B, R]
    return chosen - torch.logsumexp(scores, dim=-1)  # log softmax at the chosen token
