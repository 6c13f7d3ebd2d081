"""Recorded calls of one finished rollout → one :class:`Sample` per call (DESIGN §6).

Rewards: a trajectory of T calls with terminal reward r_T gives call t (1-based) the reward
``r_t = γ^(T−t) · r_T`` (γ = 1: every call gets r_T). Outcomes: ``ok`` trains with the
verifier's reward, ``policy_error`` trains with reward 0, ``infra_error`` and ``timeout``
are dropped (they say nothing about the policy). A rollout with a reply cut at the generation
cap (a call whose ``finish_reason`` is ``length``: the per-call or per-rollout token budget
ran out mid-reply) trains with the verifier's reward and is counted (``n_cut_replies``).
Calls that failed at the engine (``status = error``) carry no response and are skipped. A
call recorded without token ids is tokenized with ``tokenizer`` when one is given (the
sample is flagged ``retokenized``) and skipped otherwise.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from training.trajectory.records import RecordedCall, Sample, Trajectory, sampling_of
from training.trajectory.retokenize import tokenize_call

log = logging.getLogger(__name__)

TRAINABLE_STATUSES = frozenset({"ok", "policy_error"})
DROPPED_STATUSES = frozenset({"infra_error", "timeout"})
#: A call's ``finish_reason`` when the token budget, not the model, ended the reply.
CUT_FINISH_REASON = "length"


@dataclass
class RolloutInfo:
    """The few rollout fields reconstruction needs (from a RolloutResult, a Rollout row or a dict)."""

    rollout_id: str
    status: str
    reward: float | None = None
    group_id: str | None = None
    task_id: str | None = None

    @classmethod
    def from_any(cls, rollout: Any) -> RolloutInfo:
        if isinstance(rollout, RolloutInfo):
            return rollout
        get = rollout.get if isinstance(rollout, dict) else lambda k, d=None: getattr(rollout, k, d)
        rollout_id = get("rollout_id") or get("id")
        if not rollout_id:
            raise ValueError(f"rollout record without rollout_id/id: {rollout!r}")
        status = get("status")
        status = getattr(status, "value", status)
        return cls(
            rollout_id=str(rollout_id),
            status=str(status),
            reward=get("reward"),
            group_id=get("group_id"),
            task_id=get("task_id"),
        )


@dataclass
class BuildReport:
    """What reconstruction kept and dropped."""

    n_rollouts: int = 0
    n_trajectories: int = 0
    dropped: Counter = field(default_factory=Counter)  # status → count
    n_samples: int = 0
    n_retokenized_calls: int = 0
    n_skipped_calls: int = 0
    #: Trajectories with a reply cut at the generation cap (they train with the verifier's reward).
    n_cut_replies: int = 0
    #: Calls cut at the generation cap whose tokens were masked out of the loss (:func:`mask_cut_calls`).
    n_masked_cut_calls: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_rollouts": self.n_rollouts,
            "n_trajectories": self.n_trajectories,
            "dropped": dict(self.dropped),
            "n_samples": self.n_samples,
            "n_retokenized_calls": self.n_retokenized_calls,
            "n_skipped_calls": self.n_skipped_calls,
            "n_cut_replies": self.n_cut_replies,
            "n_masked_cut_calls": self.n_masked_cut_calls,
        }


def call_rewards(terminal_reward: float, n_calls: int, gamma: float = 1.0) -> list[float]:
    """``[γ^(T−1)·r_T, …, γ·r_T, r_T]`` for T = ``n_calls``."""
    return [terminal_reward * gamma ** (n_calls - t) for t in range(1, n_calls + 1)]


def build_trajectory(
    rollout: Any,
    calls: Sequence[Any],
    *,
    gamma: float = 1.0,
    tokenizer: Any | None = None,
    report: BuildReport | None = None,
) -> Trajectory | None:
    """The trajectory of one finished rollout, or ``None`` when it does not train.

    ``rollout``: a ``RolloutResult``, a ``storage.models.Rollout`` row or a dict with
    ``rollout_id``/``id``, ``status``, ``reward``, ``group_id``, ``task_id``.
    ``calls``: ``ModelCall`` rows or proxy ``/calls`` dicts, in any order.
    """
    report = report if report is not None else BuildReport()
    report.n_rollouts += 1
    info = RolloutInfo.from_any(rollout)
    if info.status not in TRAINABLE_STATUSES:
        report.dropped[info.status] += 1
        return None
    reward = float(info.reward or 0.0) if info.status == "ok" else 0.0
    group_id = info.group_id or info.task_id or info.rollout_id

    recorded = sorted((RecordedCall.from_any(c) for c in calls), key=lambda c: c.index)
    usable: list[tuple[RecordedCall, list[int], list[int], bool]] = []
    for call in recorded:
        if call.status != "ok" or (call.response is None and not call.response_token_ids):
            report.n_skipped_calls += 1
            continue
        if call.has_tokens:
            usable.append((call, list(call.prompt_token_ids or []), list(call.response_token_ids or []), False))
        elif tokenizer is not None:
            prompt_ids, response_ids = tokenize_call(call, tokenizer)
            report.n_retokenized_calls += 1
            usable.append((call, prompt_ids, response_ids, True))
        else:
            log.warning("rollout %s call %d has no token ids and no tokenizer was given: skipped", info.rollout_id, call.index)
            report.n_skipped_calls += 1
    if not usable:
        report.dropped["no_calls"] += 1
        return None
    if any(u[0].finish_reason == CUT_FINISH_REASON for u in usable):
        report.n_cut_replies += 1

    rewards = call_rewards(reward, len(usable), gamma)
    samples = []
    for (call, prompt_ids, response_ids, retok), r_t in zip(usable, rewards, strict=True):
        logprobs = None if retok else call.response_logprobs
        if logprobs is not None and len(logprobs) != len(response_ids):
            log.warning(
                "rollout %s call %d: %d logprobs for %d tokens; logprobs ignored",
                info.rollout_id, call.index, len(logprobs), len(response_ids),
            )
            logprobs = None
        temperature, top_p, top_k = sampling_of(call.request)
        samples.append(
            Sample(
                rollout_id=info.rollout_id,
                group_id=group_id,
                task_id=info.task_id,
                call_index=call.index,
                prompt_ids=prompt_ids,
                response_ids=response_ids,
                response_logprobs=[float(x) for x in logprobs] if logprobs is not None else None,
                reward=r_t,
                trajectory_reward=reward,
                retokenized=retok,
                policy_version=call.policy_version,
                finish_reason=call.finish_reason,
                temperature=temperature,
                top_p=top_p,
                top_k=top_k,
            )
        )
    report.n_trajectories += 1
    report.n_samples += len(samples)
    return Trajectory(
        rollout_id=info.rollout_id,
        group_id=group_id,
        task_id=info.task_id,
        status=info.status,
        reward=reward,
        samples=samples,
        calls=[u[0] for u in usable],
        retokenized=any(u[3] for u in usable),
    )


def build_trajectories(
    items: Iterable[tuple[Any, Sequence[Any]]],
    *,
    gamma: float = 1.0,
    tokenizer: Any | None = None,
) -> tuple[list[Trajectory], BuildReport]:
    """Trajectories of many ``(rollout, calls)`` pairs and a report of what was dropped."""
    report = BuildReport()
    out = []
    for rollout, calls in items:
        traj = build_trajectory(rollout, calls, gamma=gamma, tokenizer=tokenizer, report=report)
        if traj is not None:
            out.append(traj)
    if report.dropped:
        log.info("trajectory reconstruction dropped %s", dict(report.dropped))
    return out, report


def mask_cut_calls(samples: Sequence[Sample], report: BuildReport) -> None:
    """Mask every token of the per-call ``samples`` cut at the generation cap out of the loss
    (before prefix merging: one sample per call), counted in ``report.n_masked_cut_calls``: the
    call keeps its place and the rollout its reward (DAPO's overlong filtering, per call)."""
    for sample in samples:
        if sample.finish_reason == CUT_FINISH_REASON:
            sample.loss_mask = [0] * len(sample.response_ids)
            report.n_masked_cut_calls += 1
