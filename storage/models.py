"""Typed SQLAlchemy 2 models of the task DB (DESIGN §4).

One schema for SQLite (default) and PostgreSQL (at scale). Large payloads (model call
requests/responses) may live in side files; rows then keep the path in ``side_file``. A
model call may be stored relative to an earlier call of its rollout (``base_index``,
``delta``: storage/calls.py); readers see full calls through ``storage.calls.expand_calls``.
"""

from __future__ import annotations

import enum
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class CandidateStatus(str, enum.Enum):
    proposed = "proposed"
    selected = "selected"
    discarded = "discarded"
    duplicate = "duplicate"


class TaskStatus(str, enum.Enum):
    building = "building"
    built = "built"
    #: Imported from a Harbor dataset; ``openforge tasks verify`` (oracle 1, no-op 0) makes it verified.
    imported = "imported"
    testing = "testing"
    refining = "refining"
    verified = "verified"
    rejected = "rejected"


class RolloutStatus(str, enum.Enum):
    pending = "pending"
    running = "running"
    ok = "ok"
    policy_error = "policy_error"
    infra_error = "infra_error"
    timeout = "timeout"


#: Outcomes that end a rollout (DESIGN §5). infra_error and timeout are dropped from training.
FINAL_ROLLOUT_STATUSES = frozenset(
    {RolloutStatus.ok, RolloutStatus.policy_error, RolloutStatus.infra_error, RolloutStatus.timeout}
)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Candidate(Base):
    """A proposed task instruction (before build)."""

    __tablename__ = "candidates"
    __table_args__ = (
        UniqueConstraint("domain", "instruction_sha", name="uq_candidates_domain_sha"),
        Index("ix_candidates_status", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str | None] = mapped_column(String(64))
    domain: Mapped[str] = mapped_column(String(64))
    category: Mapped[str | None] = mapped_column(String(128))
    instruction: Mapped[str] = mapped_column(Text)
    instruction_sha: Mapped[str] = mapped_column(String(64))
    asset_refs: Mapped[list[Any]] = mapped_column(JSON, default=list)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    proposer: Mapped[str | None] = mapped_column(String(128))
    purpose: Mapped[str] = mapped_column(String(8), default="rl")
    quality: Mapped[float | None] = mapped_column(Float)
    embedding: Mapped[list[Any] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=CandidateStatus.proposed.value)
    dup_of: Mapped[int | None] = mapped_column(ForeignKey("candidates.id"))
    reason: Mapped[str | None] = mapped_column(Text)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Task(Base):
    """A built task directory and its life through build → test → refine."""

    __tablename__ = "tasks"
    __table_args__ = (Index("ix_tasks_status", "status"), Index("ix_tasks_domain", "domain"))

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    candidate_id: Mapped[int | None] = mapped_column(ForeignKey("candidates.id"))
    name: Mapped[str | None] = mapped_column(String(256))
    domain: Mapped[str | None] = mapped_column(String(64))
    category: Mapped[str | None] = mapped_column(String(128))
    difficulty: Mapped[str | None] = mapped_column(String(32))
    purpose: Mapped[str] = mapped_column(String(8), default="rl")
    source: Mapped[str] = mapped_column(String(32), default="synthesis")
    dir: Mapped[str] = mapped_column(Text)
    content_sha: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default=TaskStatus.building.value)
    refine_iters: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    pass_rate: Mapped[float | None] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    synth_run_id: Mapped[str | None] = mapped_column(String(64))
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    checks: Mapped[list[Check]] = relationship(back_populates="task", cascade="all, delete-orphan")


class Check(Base):
    """One build / oracle / noop / rollout / validate / judge check of a task."""

    __tablename__ = "checks"
    __table_args__ = (Index("ix_checks_task", "task_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    passed: Mapped[bool] = mapped_column(Boolean)
    reward: Mapped[float | None] = mapped_column(Float)
    rollout_id: Mapped[str | None] = mapped_column(String(64))
    log_path: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    task: Mapped[Task] = relationship(back_populates="checks")


class Rollout(Base):
    """One run of a harness on a task in a sandbox, and its outcome."""

    __tablename__ = "rollouts"
    __table_args__ = (
        Index("ix_rollouts_run", "run_id"),
        Index("ix_rollouts_group", "group_id"),
        Index("ix_rollouts_task", "task_id"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[str | None] = mapped_column(String(128))
    run_id: Mapped[str | None] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16), default="train")
    harness: Mapped[str | None] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(String(256))
    policy_version: Mapped[int | None] = mapped_column(Integer)
    group_id: Mapped[str | None] = mapped_column(String(64))
    backend: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default=RolloutStatus.pending.value)
    error_kind: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    reward: Mapped[float | None] = mapped_column(Float)
    n_calls: Mapped[int] = mapped_column(Integer, default=0)
    token_sha256: Mapped[str | None] = mapped_column(String(64), unique=True)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    logs_path: Mapped[str | None] = mapped_column(Text)
    seconds: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    calls: Mapped[list[ModelCall]] = relationship(
        back_populates="rollout", order_by="ModelCall.index", cascade="all, delete-orphan"
    )


class ModelCall(Base):
    """One recorded model call of a rollout: the unit a training sample is made of."""

    __tablename__ = "model_calls"
    __table_args__ = (UniqueConstraint("rollout_id", "index", name="uq_model_calls_rollout_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    api: Mapped[str] = mapped_column(String(16))  # chat | responses | messages
    model: Mapped[str | None] = mapped_column(String(256))
    request: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    response: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    side_file: Mapped[str | None] = mapped_column(Text)
    #: Linear storage (storage/calls.py): the earlier call of the rollout this row is stored
    #: against, and how (``prompt``/``request`` then hold only what is new). NULL: in full.
    #: Read calls through ``storage.calls.expand_calls``, never these columns raw.
    base_index: Mapped[int | None] = mapped_column(Integer)
    delta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    prompt_token_ids: Mapped[list[Any] | None] = mapped_column(JSON)
    response_token_ids: Mapped[list[Any] | None] = mapped_column(JSON)
    response_logprobs: Mapped[list[Any] | None] = mapped_column(JSON)
    finish_reason: Mapped[str | None] = mapped_column(String(32))
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    policy_version: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="ok")  # ok | error
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    rollout: Mapped[Rollout] = relationship(back_populates="calls")


class Run(Base):
    """One flow run (synthesize, distill, train, evaluate, pipeline) and its parameters."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    git_sha: Mapped[str | None] = mapped_column(String(64))
    prefect_flow_run_id: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="running")
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    metrics: Mapped[list[RunMetric]] = relationship(back_populates="run", cascade="all, delete-orphan")


class RunMetric(Base):
    """One scalar metric of a run at a step (reward, loss, pass rate ...)."""

    __tablename__ = "run_metrics"
    __table_args__ = (Index("ix_run_metrics_run_name_step", "run_id", "name", "step"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    step: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128))
    value: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    run: Mapped[Run] = relationship(back_populates="metrics")
