"""The harness registry: ``get_harness(name)`` → adapter, ``harness_names()``."""

from __future__ import annotations

from environments.harnesses.adapters.browser_use import BrowserUseHarness
from environments.harnesses.adapters.builtin import NoopHarness, OracleHarness
from environments.harnesses.adapters.claude_code import ClaudeCodeHarness
from environments.harnesses.adapters.codex import CodexHarness
from environments.harnesses.adapters.command import CommandHarness
from environments.harnesses.adapters.computer_use import ComputerUseHarness
from environments.harnesses.adapters.mini_swe_agent import MiniSweAgentHarness
from environments.harnesses.adapters.openclaw import OpenClawHarness
from environments.harnesses.adapters.react import ReactHarness
from environments.harnesses.adapters.zeroclaw import ZeroClawHarness
from environments.harnesses.base import Harness

_HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (
        ReactHarness(), CodexHarness(), ClaudeCodeHarness(), OpenClawHarness(),
        MiniSweAgentHarness(), CommandHarness(), ZeroClawHarness(), OracleHarness(), NoopHarness(),
        ComputerUseHarness(), BrowserUseHarness(),
    )
}
_ALIASES = {"claude": "claude-code", "mini": "mini-swe-agent", "mini-swe": "mini-swe-agent"}


class UnknownHarness(KeyError):
    """No adapter has this name."""

    def __str__(self) -> str:
        return str(self.args[0])


def harness_names() -> list[str]:
    return sorted(_HARNESSES)


def get_harness(name: str) -> Harness:
    """The adapter called ``name`` (aliases: claude, mini); raises :class:`UnknownHarness`."""
    key = _ALIASES.get(name, name)
    try:
        return _HARNESSES[key]
    except KeyError:
        raise UnknownHarness(f"unknown harness {name!r} (known: {', '.join(harness_names())})") from None
