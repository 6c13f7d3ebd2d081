"""Trajectory reconstruction: recorded model calls → training samples (DESIGN §6).

- :mod:`.records` — the records: :class:`RecordedCall`, :class:`Sample`, :class:`Trajectory`,
  :class:`SftExample`.
- :mod:`.build` — one sample per call with ``r_t = γ^(T−t)·r_T``; outcome filtering.
- :mod:`.grpo` — trajectory-level GRPO group advantages, zero-variance report.
- :mod:`.merge` — optional token-prefix merging of calls that extend each other.
- :mod:`.sft` — the paper's SFT filters and JSONL / Parquet export.
- :mod:`.retokenize` — token ids for calls recorded without them (flagged).
- :mod:`.source` — read rollouts and their calls from the task DB.
- :mod:`.batch` — :func:`prepare_grpo_batch`: all of the above in one call.
"""

from training.trajectory.batch import prepare_grpo_batch
from training.trajectory.build import build_trajectories, build_trajectory, call_rewards
from training.trajectory.grpo import GroupReport, assign_group_advantages, group_advantages
from training.trajectory.merge import merge_prefix_calls
from training.trajectory.records import RecordedCall, Sample, SftExample, Trajectory

__all__ = [
    "GroupReport",
    "RecordedCall",
    "Sample",
    "SftExample",
    "Trajectory",
    "assign_group_advantages",
    "build_trajectories",
    "build_trajectory",
    "call_rewards",
    "group_advantages",
    "merge_prefix_calls",
    "prepare_grpo_batch",
]
