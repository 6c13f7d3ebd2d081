"""Recorded calls → veRL batch rows: one row per call (or merged sequence).

Layout follows veRL's ``DataProto`` convention (``AgentLoopWorker._postprocess``):

    prompts        [N, P]  left-padded prompt ids
    responses      [N, R]  right-padded response ids
    response_mask  [N, R]  1 on policy tokens, 0 on tool tokens and padding
    input_ids      [N, P+R] = prompts ‖ responses
    attention_mask [N, P+R] 1 on real tokens
    position_ids   [N, P+R] cumsum(attention_mask) − 1, clipped at 0
    rollout_log_probs [N, R] engine logprobs (0 where unknown)
    advantages     [N, R]  trajectory advantage broadcast to the row's policy tokens
    token_level_scores [N, R] the row's reward r_t on its last policy token

Non-tensor: ``uid`` = ``"<group_id>\\x1f<rollout_id>"`` (what the ``openforge_grpo``
estimator groups on), ``rollout_id``, ``group_id``, ``call_index``.
This module needs only torch; :func:`to_data_proto` imports veRL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from training.trajectory.records import Sample

UID_SEP = "\x1f"


@dataclass
class VerlRows:
    tensors: dict[str, torch.Tensor]
    non_tensors: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.tensors["input_ids"].shape[0])


def make_uid(group_id: str, rollout_id: str) -> str:
    return f"{group_id}{UID_SEP}{rollout_id}"


def build_rows(
    samples: Sequence[Sample], *, pad_id: int, max_prompt_length: int, max_response_length: int
) -> VerlRows:
    """One veRL row per sample (prompt keeps its last tokens, response its first)."""
    n, P, R = len(samples), max_prompt_length, max_response_length
    prompts = torch.full((n, P), pad_id, dtype=torch.long)
    prompt_attn = torch.zeros((n, P), dtype=torch.long)
    responses = torch.full((n, R), pad_id, dtype=torch.long)
    resp_mask = torch.zeros((n, R), dtype=torch.long)
    resp_attn = torch.zeros((n, R), dtype=torch.long)
    logprobs = torch.zeros((n, R), dtype=torch.float32)
    advantages = torch.zeros((n, R), dtype=torch.float32)
    scores = torch.zeros((n, R), dtype=torch.float32)
    for i, s in enumerate(samples):
        p = list(s.prompt_ids)[-P:]
        r = list(s.response_ids)[:R]
        m = list(s.loss_mask or [])[:R]
        if p:
            prompts[i, P - len(p) :] = torch.tensor(p)
            prompt_attn[i, P - len(p) :] = 1
        if r:
            responses[i, : len(r)] = torch.tensor(r)
            resp_attn[i, : len(r)] = 1
            resp_mask[i, : len(r)] = torch.tensor(m)
            if s.response_logprobs is not None:
                logprobs[i, : len(r)] = torch.tensor(s.response_logprobs[:R], dtype=torch.float32)
        advantages[i] = s.advantage * resp_mask[i].float()
        trained = resp_mask[i].nonzero()
        if len(trained):
            scores[i, int(trained[-1])] = s.reward
    attention = torch.cat([prompt_attn, resp_attn], dim=1)
    position_ids = torch.clamp(torch.cumsum(attention, dim=1) - 1, min=0)
    tensors = {
        "prompts": prompts,
        "responses": responses,
        "response_mask": resp_mask,
        "input_ids": torch.cat([prompts, responses], dim=1),
        "attention_mask": attention,
        "position_ids": position_ids,
        "rollout_log_probs": logprobs,
        "advantages": advantages,
        "token_level_scores": scores,
    }
    non_tensors = {
        "uid": np.array([make_uid(s.group_id, s.rollout_id) for s in samples], dtype=object),
        "rollout_id": np.array([s.rollout_id for s in samples], dtype=object),
        "group_id": np.array([s.group_id for s in samples], dtype=object),
        "call_index": np.array([s.call_index for s in samples], dtype=object),
    }
    return VerlRows(tensors, non_tensors)


def to_data_proto(rows: VerlRows, meta_info: dict[str, Any] | None = None) -> Any:
    """The rows as a ``verl.DataProto`` (needs veRL installed)."""
    from verl import DataProto

    return DataProto.from_dict(tensors=dict(rows.tensors), non_tensors=dict(rows.non_tensors), meta_info=meta_info or {})
