"""What a GRPO run reports across the Prefect task boundary: one :class:`StepRecord` per
step and the run's :class:`RLReport`. Its own module so that every trainer's driver (the
local loop in :mod:`training.workflows.rl`, veRL's in :mod:`training.trainers.verl.run`)
returns the same typed records without importing the other."""

from __future__ import annotations

from pydantic import BaseModel, Field


class StepRecord(BaseModel):
    step: int
    reward_mean: float
    success_rate: float
    episode_calls: float
    outcomes: dict[str, int]
    groups: int
    zero_variance_groups: int
    samples: int
    overlong_dropped: int = 0
    updates: int = 0
    metrics: dict[str, float] = Field(default_factory=dict)
    seconds: float
    #: Wall time of the step in which no engine call was in flight / the trainer neither
    #: stepped nor pushed weights (async mode: the step runs from the previous one's end).
    engine_idle_seconds: float = 0.0
    trainer_idle_seconds: float = 0.0
    #: Call staleness (trainer version − the call's policy version) → trainable calls consumed.
    staleness: dict[int, int] = Field(default_factory=dict)
    stale_dropped: int = 0  # samples (calls) of trajectories dropped as older than train.max_staleness
    stale_corrected: int = 0  # ... kept and importance-corrected (stale_policy = correct)
    spanning: int = 0  # trajectories whose calls span policy versions
    spanning_dropped: int = 0
    mode: str = "sync"


class RLReport(BaseModel):
    run_id: str
    preset: str
    steps: list[StepRecord]
    checkpoint: str | None
    curve_png: str | None
    seconds: float

    @property
    def updates(self) -> int:
        return sum(s.updates for s in self.steps)

    @property
    def samples_trained(self) -> int:
        return sum(s.samples for s in self.steps if s.updates)
