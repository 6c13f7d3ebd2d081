"""Configuration of one synthesis run, and the context the stages share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import Engine

from synthesis.checker import TaskChecker
from synthesis.runtime.base import AgentRuntime, Budget

Backend = Literal["procedural", "claude", "openai"]


class SynthConfig(BaseModel):
    """Knobs of a synthesis run (CLI options map onto these)."""

    domain: str = "claw"
    n: int = Field(default=16, gt=0, description="Verified tasks wanted.")
    backend: Backend = "procedural"
    purpose: Literal["rl", "sft"] = "rl"
    workers: int = Field(default=2, gt=0)
    seed: int | None = None
    oversample: float = Field(default=1.5, ge=1.0, description="Proposals per wanted task.")
    tau: float | None = Field(default=None, description="Dedup cosine threshold (default per model).")
    embed_model: str = "all-MiniLM-L6-v2"
    quality_judge: Literal["heuristic", "llm"] = "heuristic"
    k_rollouts: int = Field(default=0, ge=0, description="Test-model rollouts per task.")
    test_harness: str = "mini"
    max_refine: int = Field(default=2, ge=0)
    max_rounds: int = Field(default=4, gt=0, description="Propose/prune rounds to refill rejects.")
    proposals_per_call: int = Field(default=8, gt=0)
    pool: str | None = Field(default=None, description="User pool (JSONL or folder); packaged pool if None.")
    families: list[str] | None = Field(default=None, description="Procedural families to draw from (default: the pool's).")
    propose_budget: Budget = Field(default_factory=lambda: Budget(max_usd=1.0, max_turns=20))
    build_budget: Budget = Field(default_factory=lambda: Budget(max_usd=3.0, max_turns=40))
    refine_budget: Budget = Field(default_factory=lambda: Budget(max_usd=2.0, max_turns=30))
    judge_budget: Budget = Field(default_factory=lambda: Budget(max_usd=0.5, max_turns=6))


@dataclass
class SynthContext:
    """What every stage function receives."""

    engine: Engine
    run_id: str
    config: SynthConfig
    tasks_dir: Path
    work_dir: Path
    checker: TaskChecker
    runtime: AgentRuntime | None = None
    seed: int = 0
    extra: dict = field(default_factory=dict)
