"""Optional token-prefix merging: calls that extend each other become one masked sequence.

When call k+1's prompt ids start with call k's ``prompt_ids + response_ids`` (a harness that
resends its history verbatim), the two calls are one sequence: the new tokens between them
(tool results, the next user turn) join the response with loss mask 0 and logprob 0. One
forward pass then trains both calls. Calls that do not extend the previous one (OpenClaw
rewrites tool-call ids, FEASIBILITY.md), or that were sampled under another distribution or
policy version, start a new sequence — per-call samples need no merging, so this is an
efficiency option, never a requirement. It is exact for γ = 1 (every call of a trajectory
has the same advantage); the batch builder merges only then.

    call 1: [P1][R1]
    call 2: [P1][R1][T1][R2]        → one sample: prompt P1, response R1 T1 R2,
                                               mask     1..1 0..0 1..1
"""

from __future__ import annotations

import dataclasses

from training.trajectory.records import Sample, Trajectory


def _extends(prev: Sample, nxt: Sample) -> bool:
    context = len(prev.prompt_ids) + len(prev.response_ids)
    return (
        prev.sampling == nxt.sampling  # one sequence is scored under one sampling distribution
        and prev.policy_version == nxt.policy_version  # ... and against one behaviour policy
        and len(nxt.prompt_ids) >= context
        and nxt.prompt_ids[: len(prev.prompt_ids)] == prev.prompt_ids
        and nxt.prompt_ids[len(prev.prompt_ids) : context] == prev.response_ids
    )


def merge_samples(samples: list[Sample]) -> list[Sample]:
    """Merge consecutive samples of one trajectory that extend each other."""
    merged: list[Sample] = []
    for sample in samples:
        cur = merged[-1] if merged else None
        if cur is None or not _extends(cur, sample):
            merged.append(dataclasses.replace(sample, loss_mask=list(sample.loss_mask or []), call_indices=list(sample.call_indices)))
            continue
        gap = sample.prompt_ids[len(cur.prompt_ids) + len(cur.response_ids) :]
        if cur.response_logprobs is not None and sample.response_logprobs is not None:
            cur.response_logprobs = cur.response_logprobs + [0.0] * len(gap) + list(sample.response_logprobs)
        else:
            cur.response_logprobs = None
        cur.response_ids = cur.response_ids + list(gap) + list(sample.response_ids)
        cur.loss_mask = (cur.loss_mask or []) + [0] * len(gap) + list(sample.loss_mask or [])
        cur.call_indices.append(sample.call_index)
        cur.reward = sample.reward
        cur.advantage = sample.advantage
        cur.retokenized = cur.retokenized or sample.retokenized
        cur.finish_reason = sample.finish_reason
        cur.policy_version = sample.policy_version
    return merged


def merge_prefix_calls(trajectory: Trajectory) -> Trajectory:
    """A copy of ``trajectory`` whose samples are prefix-merged (see module doc)."""
    return dataclasses.replace(trajectory, samples=merge_samples(trajectory.samples))
