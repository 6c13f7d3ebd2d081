"""Adapters that need no model: ``oracle`` (runs the task's solution/solve.sh) and ``noop``
(does nothing) — the two checks every task must pass (oracle → 1.0, noop → 0.0)."""

from __future__ import annotations

from dataclasses import dataclass

from environments.harnesses.base import (
    Harness,
    HarnessContext,
    HarnessMissing,
    python_executable,
)


@dataclass(frozen=True)
class OracleHarness(Harness):
    name: str = "oracle"
    description: str = "Runs solution/solve.sh in the workspace."
    uses_model: bool = False

    def command(self, ctx: HarnessContext) -> list[str]:
        script = (ctx.solution_dir / "solve.sh") if ctx.solution_dir else None
        if script is None or not script.is_file():
            raise HarnessMissing(f"oracle: {script or 'solution/solve.sh'} not found")
        return ["bash", str(script)]

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        # Oracles that drive a harness's action layer (computer-use: ``--replay``) need the
        # runner's interpreter, which has the project's dependencies.
        return {"OPENFORGE_PYTHON": python_executable()}


@dataclass(frozen=True)
class NoopHarness(Harness):
    name: str = "noop"
    description: str = "Does nothing (the no-op agent must score 0.0)."
    uses_model: bool = False

    def command(self, ctx: HarnessContext) -> list[str]:
        return ["true"]
