"""Harness adapters: how each real harness is installed, configured and launched against
the proxy's per-rollout base URL (react, codex, claude-code, openclaw, mini-swe-agent,
command, zeroclaw, oracle, noop). ``get_harness(name)`` is the one entry point."""

from environments.harnesses.base import (
    OUTCOME_FILE,
    SERVICES_URL_ENV,
    Harness,
    HarnessConfigError,
    HarnessContext,
    HarnessMissing,
    LaunchPlan,
)
from environments.harnesses.registry import UnknownHarness, get_harness, harness_names

__all__ = [
    "OUTCOME_FILE",
    "SERVICES_URL_ENV",
    "Harness",
    "HarnessConfigError",
    "HarnessContext",
    "HarnessMissing",
    "LaunchPlan",
    "UnknownHarness",
    "get_harness",
    "harness_names",
]
