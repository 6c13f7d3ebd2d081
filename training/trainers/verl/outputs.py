"""A reconstructed trajectory → the fields of one veRL ``AgentLoopOutput`` (no veRL import).

The trajectory's calls are prefix-merged into one sequence (see
:mod:`training.trajectory.merge`); when they do not all extend each other the last
segment is used and the others are counted in ``extra_fields["openforge_dropped_segments"]``.
A rollout that does not train (infra_error / timeout, or no usable calls) becomes a
one-token row with ``response_mask`` 0: it adds no loss, and the ``openforge_grpo``
estimator leaves it out of its group's statistics.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from environments.records import RolloutResult, RolloutSpec
from training.trajectory.merge import merge_samples
from training.trajectory.records import Trajectory

log = logging.getLogger(__name__)


@dataclass
class RolloutRequest:
    """What the agent loop asks OpenForge's scheduler for: one rollout of one task."""

    task_id: str | None
    group_id: str | None
    messages: list[dict[str, Any]]
    sampling_params: dict[str, Any]
    extra_info: dict[str, Any] = field(default_factory=dict)
    sample_index: int | None = None
    validate: bool = False


@dataclass
class RecordedRollout:
    """What the scheduler returns: the outcome (``RolloutResult`` or dict) and its recorded calls."""

    result: Any
    calls: list[Any]


def output_fields(
    trajectory: Trajectory | None,
    *,
    prompt_length: int,
    response_length: int,
    pad_id: int,
    status: str = "ok",
) -> dict[str, Any]:
    """Keyword arguments for ``AgentLoopOutput`` (minus ``metrics``)."""
    if trajectory is None or not trajectory.samples:
        return {
            "prompt_ids": [pad_id],
            "response_ids": [pad_id],
            "response_mask": [0],
            "response_logprobs": [0.0],
            "reward_score": 0.0,
            "num_turns": 0,
            "extra_fields": {"openforge_status": status, "openforge_trainable": False, "openforge_dropped_segments": 0},
        }
    segments = merge_samples(trajectory.samples)
    seg = segments[-1]
    dropped = len(segments) - 1
    if dropped:
        log.warning(
            "rollout %s: %d of %d call segments do not extend the last one and are not trained (veRL takes one sequence per trajectory)",
            trajectory.rollout_id, dropped, len(segments),
        )
    prompt = list(seg.prompt_ids)[-prompt_length:]
    response = list(seg.response_ids)[:response_length]
    mask = list(seg.loss_mask or [])[:response_length]
    logprobs = list(seg.response_logprobs)[:response_length] if seg.response_logprobs is not None else None
    return {
        "prompt_ids": prompt,
        "response_ids": response,
        "response_mask": mask,
        "response_logprobs": logprobs,
        "reward_score": float(trajectory.reward),
        "num_turns": 2 * trajectory.n_calls,
        "extra_fields": {
            "openforge_rollout_id": trajectory.rollout_id,
            "openforge_status": trajectory.status,
            "openforge_trainable": True,
            "openforge_n_calls": trajectory.n_calls,
            "openforge_dropped_segments": dropped,
            "openforge_retokenized": trajectory.retokenized,
        },
    }


def make_rollout_fn(
    run_one: Callable[[RolloutSpec], Awaitable[RolloutResult]],
    fetch_calls: Callable[[str], Awaitable[list[Any]]],
    *,
    task_dir: Callable[[str], str],
    harness: str,
    timeout_sec: float = 600.0,
    run_id: str | None = None,
) -> Callable[[RolloutRequest], Awaitable[RecordedRollout]]:
    """A rollout function for :class:`~.agent_loop.OpenForgeAgentLoop` from two coroutines:
    ``run_one(spec) → RolloutResult`` (the scheduler's ``Scheduler.run_one``) and
    ``fetch_calls(rollout_id) → [call, ...]`` (the proxy's ``GET /admin/rollouts/{id}/calls``
    or the DB). ``task_dir(task_id)`` finds a task's directory."""

    async def rollout_fn(request: RolloutRequest) -> RecordedRollout:
        if not request.task_id:
            raise ValueError("veRL dataset row has no extra_info.task_id: cannot pick a task to roll out")
        spec = RolloutSpec(
            rollout_id=f"verl-{uuid.uuid4().hex[:16]}",
            task_dir=task_dir(request.task_id),
            harness=harness,
            task_id=request.task_id,
            group_id=str(request.group_id) if request.group_id is not None else None,
            run_id=run_id,
            role="eval" if request.validate else "train",
            timeout_sec=timeout_sec,
            harness_options={"sampling_params": request.sampling_params},
        )
        result = await run_one(spec)
        calls = await fetch_calls(result.rollout_id) if result.trainable else []
        return RecordedRollout(result=result, calls=calls)

    return rollout_fn
