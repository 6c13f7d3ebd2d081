"""The ``claude`` agent backend: the Claude Agent SDK driving the real Claude Code binary.

Our tools are served in-process as an MCP server (``create_sdk_mcp_server``); the agent's
built-in tools are switched off, so it can touch the task DB, the task dir and rollouts
only through them. Budgets map onto the SDK's ``max_budget_usd`` and ``max_turns``; the
cost comes from the SDK's final ``ResultMessage``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from synthesis.runtime.base import AgentResult, AgentTool, Budget, CallGate

log = logging.getLogger(__name__)

MCP_SERVER = "openforge"
DEFAULT_MODEL = "opus"


def _sdk_tool(tool: AgentTool):  # noqa: ANN202
    from claude_agent_sdk import tool as sdk_tool  # noqa: PLC0415 - optional extra

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        text, is_error = await tool.invoke(dict(args or {}))
        out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if is_error:
            out["is_error"] = True
        return out

    return sdk_tool(tool.name, tool.description, tool.input_schema)(handler)


def _plain(message: Any) -> dict[str, Any]:
    if is_dataclass(message):
        data = asdict(message)
    else:
        data = {"value": repr(message)}
    data["type"] = type(message).__name__
    return data


class ClaudeAgent:
    """Runs one prompt through ``claude_agent_sdk.query`` with only our MCP tools enabled."""

    name = "claude"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        cli_path: str | Path | None = None,
        env: dict[str, str] | None = None,
        extra_builtin_tools: list[str] | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.model = model
        #: Entered around each agent call: the Claude Code process makes the API requests
        #: itself, one at a time, so one slot per call bounds concurrent requests.
        self.gate = gate
        self.cli_path = cli_path
        self.env = dict(env or {})
        self.builtin_tools = list(extra_builtin_tools or [])

    def _options(self, tools: list[AgentTool], workdir: Path, budget: Budget, system: str | None):  # noqa: ANN202
        from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server  # noqa: PLC0415

        from environments.harnesses.binaries import find_binary  # noqa: PLC0415

        server = create_sdk_mcp_server(MCP_SERVER, tools=[_sdk_tool(t) for t in tools])
        cli = self.cli_path or find_binary("claude")
        allowed = [f"mcp__{MCP_SERVER}__{t.name}" for t in tools] + self.builtin_tools
        return ClaudeAgentOptions(
            tools=list(self.builtin_tools),
            allowed_tools=allowed,
            mcp_servers={MCP_SERVER: server},
            strict_mcp_config=True,
            permission_mode="dontAsk",
            system_prompt=system,
            max_turns=budget.max_turns,
            max_budget_usd=budget.max_usd,
            model=self.model,
            cwd=str(workdir),
            cli_path=str(cli) if cli else None,
            env=self.env,
            setting_sources=[],
        )

    async def run(
        self,
        prompt: str,
        tools: list[AgentTool],
        workdir: Path,
        budget: Budget,
        *,
        system: str | None = None,
    ) -> AgentResult:
        from claude_agent_sdk import (  # noqa: PLC0415
            AssistantMessage,
            ClaudeSDKError,
            ResultMessage,
            ToolUseBlock,
            query,
        )

        workdir.mkdir(parents=True, exist_ok=True)
        options = self._options(tools, workdir, budget, system)
        result = AgentResult(ok=False)
        start = time.monotonic()

        async def prompts():  # noqa: ANN202 - streaming input keeps the SDK MCP channel open
            yield {"type": "user", "message": {"role": "user", "content": prompt}}

        async def consume() -> None:
            async for message in query(prompt=prompts(), options=options):
                result.transcript.append(_plain(message))
                if isinstance(message, AssistantMessage):
                    result.turns += 1
                    result.tool_calls += sum(isinstance(b, ToolUseBlock) for b in message.content)
                elif isinstance(message, ResultMessage):
                    result.cost_usd = float(message.total_cost_usd or 0.0)
                    result.final_text = message.result or ""
                    result.ok = not message.is_error and message.subtype == "success"
                    result.stop_reason = {
                        "success": "completed",
                        "error_max_turns": "max_turns",
                        "error_max_budget_usd": "max_budget",
                    }.get(message.subtype, message.subtype)
                    if not result.ok:
                        result.error = f"claude result {message.subtype}: {message.errors or message.result}"

        try:
            if self.gate is None:
                await asyncio.wait_for(consume(), budget.timeout_s)
            else:  # the wall-clock budget starts once the call holds its slot
                async with self.gate():
                    await asyncio.wait_for(consume(), budget.timeout_s)
        except asyncio.TimeoutError:
            result.ok, result.stop_reason = False, "timeout"
            result.error = f"agent call exceeded {budget.timeout_s:.0f}s"
        except ClaudeSDKError as exc:
            # the CLI exits non-zero after an error result (max turns/budget): keep that reason
            if result.stop_reason is None:
                result.stop_reason = "error"
            result.ok = False
            result.error = result.error or f"claude sdk: {exc}"
        result.seconds = time.monotonic() - start
        return result
