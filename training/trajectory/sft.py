"""SFT data from teacher trajectories: the paper's filters and JSONL / Parquet export (DESIGN §1.2).

Filters, in order, per task:

1. keep successful trajectories only (status ``ok`` and reward ≥ ``success_threshold``);
2. drop a trajectory in which one action occurs more than ``max_identical_actions`` (5)
   times — counted over the whole trajectory, before collapsing;
3. collapse every run of more than ``max_identical_run`` (3) identical consecutive actions
   to its last action (the other calls of the run are removed);
4. keep the shortest success per task (fewest calls after collapsing; ties: fewest response
   tokens, then rollout id).

An *action* is what one model call's response does: its tool calls (name + parsed
arguments) or, without tool calls, its text (:func:`~training.trajectory.retokenize.action_key`).

Exports: JSONL with one chat conversation per trajectory (``messages``, ``tools``, ids,
reward) and Parquet with token ids + loss masks (one row per sequence).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.trajectory.merge import merge_samples
from training.trajectory.records import SftExample, Trajectory
from training.trajectory.retokenize import action_key, request_messages, response_message

log = logging.getLogger(__name__)


@dataclass
class SftFilterReport:
    n_in: int = 0
    n_unsuccessful: int = 0
    n_repetitive: int = 0
    n_collapsed_calls: int = 0
    n_not_shortest: int = 0
    n_kept: int = 0
    dropped_rollouts: dict[str, str] = field(default_factory=dict)  # rollout id → reason


def call_actions(traj: Trajectory) -> list[str]:
    """The action key of every call of ``traj``, in order."""
    return [action_key(response_message(c.api, c.response)) for c in traj.calls]


def collapse_runs(keys: Sequence[str], max_run: int) -> list[int]:
    """Positions to keep: a run of more than ``max_run`` identical keys keeps only its last."""
    keep: list[int] = []
    i = 0
    while i < len(keys):
        j = i
        while j + 1 < len(keys) and keys[j + 1] == keys[i]:
            j += 1
        run = list(range(i, j + 1))
        keep.extend(run if len(run) <= max_run else [j])
        i = j + 1
    return keep


def _collapse(traj: Trajectory, max_run: int) -> tuple[Trajectory, int]:
    keys = call_actions(traj)
    keep = collapse_runs(keys, max_run)
    if len(keep) == len(keys):
        return traj, 0
    kept_idx = {traj.calls[k].index for k in keep}
    new = dataclasses.replace(
        traj,
        calls=[traj.calls[k] for k in keep],
        samples=[s for s in traj.samples if s.call_index in kept_idx],
    )
    return new, len(keys) - len(keep)


def filter_sft_trajectories(
    trajectories: Iterable[Trajectory],
    *,
    success_threshold: float = 1.0,
    max_identical_run: int = 3,
    max_identical_actions: int = 5,
    shortest_per_task: bool = True,
) -> tuple[list[Trajectory], SftFilterReport]:
    """Apply the paper's SFT filters (module doc); returns the kept trajectories and a report."""
    report = SftFilterReport()
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in trajectories:
        report.n_in += 1
        if traj.status != "ok" or traj.reward < success_threshold:
            report.n_unsuccessful += 1
            report.dropped_rollouts[traj.rollout_id] = "unsuccessful"
            continue
        counts = Counter(call_actions(traj))
        if counts and max(counts.values()) > max_identical_actions:
            report.n_repetitive += 1
            report.dropped_rollouts[traj.rollout_id] = "repetitive"
            continue
        traj, n_removed = _collapse(traj, max_identical_run)
        report.n_collapsed_calls += n_removed
        by_task[traj.task_id or traj.group_id].append(traj)
    kept: list[Trajectory] = []
    for members in by_task.values():
        if not shortest_per_task:
            kept.extend(members)
            continue
        members.sort(key=lambda t: (t.n_calls, t.n_response_tokens, t.rollout_id))
        kept.append(members[0])
        for other in members[1:]:
            report.n_not_shortest += 1
            report.dropped_rollouts[other.rollout_id] = "not_shortest"
    report.n_kept = len(kept)
    return kept, report


def _steps(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Split a conversation into its head (before the first assistant turn) and steps
    (an assistant message plus the observations that follow it)."""
    head: list[dict[str, Any]] = []
    steps: list[list[dict[str, Any]]] = []
    for msg in messages:
        if msg.get("role") == "assistant":
            steps.append([msg])
        elif steps:
            steps[-1].append(msg)
        else:
            head.append(msg)
    return head, steps


def sft_messages(traj: Trajectory, *, max_identical_run: int = 3) -> dict[str, Any]:
    """One chat record of a trajectory: the last call's conversation plus its reply, with
    runs of identical assistant actions collapsed the same way as the calls."""
    last = traj.calls[-1]
    messages, tools = request_messages(last.api, last.request)
    messages = messages + [response_message(last.api, last.response)]
    head, steps = _steps(messages)
    keep = collapse_runs([action_key(step[0]) for step in steps], max_identical_run)
    conversation = head + [m for k in keep for m in steps[k]]
    record: dict[str, Any] = {
        "messages": conversation,
        "rollout_id": traj.rollout_id,
        "task_id": traj.task_id,
        "reward": traj.reward,
        "n_calls": traj.n_calls,
    }
    if tools:
        record["tools"] = tools
    return record


def sft_examples(traj: Trajectory, *, merge: bool = True) -> list[SftExample]:
    """Token-level SFT sequences of a trajectory: prompt masked, policy tokens learned."""
    samples = merge_samples(traj.samples) if merge else traj.samples
    return [SftExample.from_sample(s) for s in samples]


def write_sft_jsonl(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write chat records, one JSON object per line; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_sft_parquet(examples: Sequence[SftExample], path: str | Path) -> int:
    """Write token ids + loss masks to Parquet; returns the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "rollout_id": pa.array([e.rollout_id for e in examples], pa.string()),
            "task_id": pa.array([e.task_id for e in examples], pa.string()),
            "input_ids": pa.array([e.input_ids for e in examples], pa.list_(pa.int32())),
            "loss_mask": pa.array([e.loss_mask for e in examples], pa.list_(pa.int8())),
            "n_tokens": pa.array([len(e.input_ids) for e in examples], pa.int32()),
        }
    )
    pq.write_table(table, path)
    return table.num_rows


def read_sft_parquet(path: str | Path) -> list[SftExample]:
    """Read what :func:`write_sft_parquet` wrote."""
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    return [SftExample(input_ids=r["input_ids"], loss_mask=r["loss_mask"], rollout_id=r["rollout_id"] or "", task_id=r["task_id"]) for r in rows]
