"""A reconstructed trajectory → the ``AgentLoopOutput`` fields veRL trains on (no veRL import).

veRL 0.9.1's default (v1) trainer takes a *list* of outputs per (task, sample)
(``AgentLoopWorkerTQ._agent_loop_postprocess``: keys ``{uid}_{session}_{i}``), so every call
of a trajectory is trained: its calls are prefix-merged where they extend each other
(:mod:`training.trajectory.merge`) and each merged segment becomes one output. OpenClaw /
compaction / subagent trajectories whose history is rewritten give several segments, all
kept. veRL computes GRPO on each session's last output and broadcasts the advantage to the
others (``compute_advantage_for_multi_trajectories``) — trajectory-level GRPO, as ours.

Each output carries ``extra_fields.min_global_steps`` / ``max_global_steps`` (the policy
versions that generated it, from the recorded calls, else the step's ``global_steps``): the
v1 trainer's staleness metrics read them. A segment longer than
``prompt_length``/``response_length`` is dropped and counted
(``openforge_overlong_dropped``), never truncated. A rollout that does not train
(infra_error / timeout, no usable calls) returns no outputs: veRL leaves the session out
of its group's statistics (a dropped rollout is masked, not a zero-reward sample).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from environments.records import RolloutResult, RolloutSpec
from training.trajectory.merge import merge_samples
from training.trajectory.records import RecordedCall, Trajectory
from training.trajectory.staleness import call_versions

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
    #: veRL's step (the weights its replicas serve); the policy version of calls that record none.
    global_steps: int | None = None
    #: OpenAI base URLs of veRL's vLLM replicas, where the rollout's proxy sends model calls.
    server_addresses: list[str] = field(default_factory=list)
    #: The replicas' server actors (Ray handles) by address, where veRL's server manager gave
    #: them: the rollout reads from each the step of the weights it serves, per call.
    server_handles: dict[str, Any] = field(default_factory=dict)


@dataclass
class RecordedRollout:
    """What the scheduler returns: the outcome (``RolloutResult`` or dict) and its recorded calls."""

    result: Any
    calls: list[Any]


def final_versions(calls: Sequence[Any]) -> dict[int, int]:
    """``{call index: policy version}`` of the weights each recorded call *ended* under (its
    ``policy_version_final`` where the weights changed during the call, else its own)."""
    out: dict[int, int] = {}
    for call in calls:
        rec = RecordedCall.from_any(call)  # validated once: call_versions takes the record as it is
        _, final = call_versions(rec)
        if final is not None:
            out[rec.index] = final
    return out


def output_list(
    trajectory: Trajectory | None,
    *,
    prompt_length: int,
    response_length: int,
    global_steps: int | None = None,
    final_versions: Mapping[int, int] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``(outputs, counts)``: keyword arguments of one ``AgentLoopOutput`` (minus ``metrics``)
    per merged segment, and ``{"segments", "overlong_dropped"}``. A segment's
    ``min_global_steps`` is the oldest version its calls were admitted under, its
    ``max_global_steps`` the newest they ended under (``final_versions``, by call index)."""
    if trajectory is None or not trajectory.samples:
        return [], {"segments": 0, "overlong_dropped": 0}
    segments = merge_samples(trajectory.samples)
    finals = final_versions or {}
    outputs: list[dict[str, Any]] = []
    overlong = 0
    for seg in segments:
        if len(seg.prompt_ids) > prompt_length or len(seg.response_ids) > response_length:
            overlong += 1
            continue
        version = seg.policy_version if seg.policy_version is not None else global_steps
        first = min((s.policy_version for s in trajectory.samples
                     if s.call_index in seg.call_indices and s.policy_version is not None), default=version)
        last = max((v for v in (version, *(finals.get(i) for i in seg.call_indices)) if v is not None), default=None)
        outputs.append({
            "prompt_ids": list(seg.prompt_ids),
            "response_ids": list(seg.response_ids),
            "response_mask": list(seg.loss_mask or []),
            "response_logprobs": list(seg.response_logprobs) if seg.response_logprobs is not None else None,
            "reward_score": float(trajectory.reward),
            "num_turns": 2 * len(seg.call_indices),
            "extra_fields": {
                "min_global_steps": first if first is not None else -1,
                "max_global_steps": last if last is not None else -1,
                "openforge_rollout_id": trajectory.rollout_id,
                "openforge_status": trajectory.status,
                "openforge_calls": list(seg.call_indices),
                "openforge_retokenized": seg.retokenized,
            },
        })
    if overlong:
        log.warning("rollout %s: %d of %d segments exceed prompt %d / response %d tokens and are not trained",
                    trajectory.rollout_id, overlong, len(segments), prompt_length, response_length)
    return outputs, {"segments": len(segments), "overlong_dropped": overlong}


def make_rollout_fn(
    run_one: Callable[[RolloutSpec], Awaitable[RolloutResult]],
    fetch_calls: Callable[[str], Awaitable[list[Any]]],
    *,
    task_dir: Callable[[str], str],
    harness: str,
    timeout_sec: float = 600.0,
    run_id: str | None = None,
    harness_options: dict[str, Any] | None = None,
    cpus: float | None = None,
    memory_mb: int | None = None,
) -> Callable[[RolloutRequest], Awaitable[RecordedRollout]]:
    """A rollout function for :class:`~.agent_loop.OpenForgeAgentLoop` from two coroutines:
    ``run_one(spec) → RolloutResult`` (the scheduler's ``Scheduler.run_one``) and
    ``fetch_calls(rollout_id) → [call, ...]`` (the proxy's ``GET /admin/rollouts/{id}/calls``
    or the DB). ``task_dir(task_id)`` finds a task's directory. ``harness_options`` (the
    preset's, :func:`training.workflows.common.harness_options`) are kept; veRL's sampling
    parameters of the step override their temperature / top_p."""
    base_options = dict(harness_options or {})

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
            harness_options=_with_sampling(base_options, request.sampling_params),
            cpus=cpus, memory_mb=memory_mb,
        )
        result = await run_one(spec)
        calls = await fetch_calls(result.rollout_id) if result.trainable else []
        return RecordedRollout(result=result, calls=calls)

    return rollout_fn


def _with_sampling(options: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
    """The preset's harness options with veRL's temperature / top_p of this step."""
    out = dict(options)
    for key in ("temperature", "top_p"):
        if sampling.get(key) is not None:
            out[key] = sampling[key]
    return out
