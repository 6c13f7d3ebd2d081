"""The agent runtime protocol every synthesis backend implements.

``run(prompt, tools, workdir, budget) -> AgentResult``: an agent gets a prompt, a small set
of tools (plain async Python callables with a JSON schema), a working directory it may
touch, and a budget (dollars, turns, wall clock). Backends: ``claude`` (Claude Agent SDK
with in-process MCP tools), ``openai`` (our own tool-calling loop over any
OpenAI-compatible endpoint). The offline ``procedural`` generators need no agent at all.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

#: A tool handler takes the tool's JSON arguments and returns text or a JSON-able value.
ToolHandler = Callable[[dict[str, Any]], Awaitable[Any]]
#: Entered around every call a runtime makes to a paid model API (``openai``: each request;
#: ``claude``: each agent call, whose requests the Claude Code process makes one at a time).
#: A gate that waits for a free slot bounds concurrent calls and their rate across every
#: process sharing it (``tasks.paid_api``: Prefect global limits). None: calls are not gated.
CallGate = Callable[[], AbstractAsyncContextManager[None]]


class ToolError(Exception):
    """A tool refused its arguments; the message goes back to the agent as the result."""


@dataclass(frozen=True)
class AgentTool:
    """One tool offered to an agent: name, description, JSON schema and handler."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler = field(compare=False)

    async def invoke(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run the handler; returns (result text, is_error). Never raises on tool errors."""
        try:
            value = await self.handler(arguments)
        except ToolError as exc:
            return f"error: {exc}", True
        except (ValueError, KeyError, TypeError, OSError) as exc:
            return f"error: {type(exc).__name__}: {exc}", True
        if isinstance(value, str):
            return value, False
        return json.dumps(value, default=str), False


class Budget(BaseModel):
    """Limits of one agent call."""

    max_usd: float | None = Field(default=2.0, description="Stop once the call cost this much.")
    max_turns: int = Field(default=30, gt=0, description="Model turns (requests) at most.")
    timeout_s: float = Field(default=900.0, gt=0, description="Wall clock of the whole call.")


class AgentResult(BaseModel):
    """What an agent call produced (its transcript) and what it cost."""

    ok: bool
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    final_text: str = ""
    cost_usd: float = 0.0
    seconds: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    stop_reason: str | None = None  # completed | max_turns | max_budget | timeout | error
    error: str | None = None

    def save(self, path: Path) -> str:
        """Write the transcript and totals as JSON (for audits and refine prompts); returns the path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        return str(path)


@runtime_checkable
class AgentRuntime(Protocol):
    """An agent backend: runs one prompt with tools to completion within a budget."""

    name: str

    async def run(
        self,
        prompt: str,
        tools: list[AgentTool],
        workdir: Path,
        budget: Budget,
        *,
        system: str | None = None,
    ) -> AgentResult:
        ...
