"""The harness registry: ``get_harness(name)`` → adapter, ``harness_names()``.

Each adapter's module is imported when its harness is first asked for: a runner imports the
one it runs, not all eleven (about 8 ms of CPU per rollout)."""

from __future__ import annotations

import importlib

from environments.harnesses.base import Harness

#: harness name → (module under ``environments.harnesses.adapters``, adapter class).
_ADAPTERS: dict[str, tuple[str, str]] = {
    "react": ("react", "ReactHarness"),
    "codex": ("codex", "CodexHarness"),
    "claude-code": ("claude_code", "ClaudeCodeHarness"),
    "openclaw": ("openclaw", "OpenClawHarness"),
    "mini-swe-agent": ("mini_swe_agent", "MiniSweAgentHarness"),
    "command": ("command", "CommandHarness"),
    "zeroclaw": ("zeroclaw", "ZeroClawHarness"),
    "oracle": ("builtin", "OracleHarness"),
    "noop": ("builtin", "NoopHarness"),
    "computer-use": ("computer_use", "ComputerUseHarness"),
    "browser-use": ("browser_use", "BrowserUseHarness"),
}
#: Every adapter module (what a slim runtime image must carry).
ADAPTER_MODULES = tuple(sorted({module for module, _ in _ADAPTERS.values()}))
_ALIASES = {"claude": "claude-code", "mini": "mini-swe-agent", "mini-swe": "mini-swe-agent"}
_LOADED: dict[str, Harness] = {}


class UnknownHarness(KeyError):
    """No adapter has this name."""

    def __str__(self) -> str:
        return str(self.args[0])


def harness_names() -> list[str]:
    return sorted(_ADAPTERS)


def get_harness(name: str) -> Harness:
    """The adapter called ``name`` (aliases: claude, mini); raises :class:`UnknownHarness`."""
    key = _ALIASES.get(name, name)
    if key not in _ADAPTERS:
        raise UnknownHarness(f"unknown harness {name!r} (known: {', '.join(harness_names())})")
    if key not in _LOADED:
        module, cls = _ADAPTERS[key]
        _LOADED[key] = getattr(importlib.import_module(f"environments.harnesses.adapters.{module}"), cls)()
    return _LOADED[key]
