"""Harness adapters: how each real harness is installed, configured and launched against
the proxy's per-rollout base URL (react, codex, claude-code, openclaw, mini-swe-agent,
command, zeroclaw, oracle, noop). ``get_harness(name)`` is the one entry point.

The registry (every adapter) loads on first use of its names: a harness process such as
``python -m environments.harnesses.react`` imports this package without needing it."""

from typing import TYPE_CHECKING, Any

from environments.harnesses.base import (
    OUTCOME_FILE,
    SERVICES_URL_ENV,
    Harness,
    HarnessConfigError,
    HarnessContext,
    HarnessMissing,
    LaunchPlan,
)

if TYPE_CHECKING:
    from environments.harnesses.registry import UnknownHarness, get_harness, harness_names

_REGISTRY_NAMES = frozenset({"UnknownHarness", "get_harness", "harness_names"})


def __getattr__(name: str) -> Any:
    if name in _REGISTRY_NAMES:
        from environments.harnesses import registry  # noqa: PLC0415

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
