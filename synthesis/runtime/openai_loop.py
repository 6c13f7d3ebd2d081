"""The ``openai`` agent backend: our own tool-calling loop with the official openai SDK.

Works against any OpenAI-compatible Chat Completions endpoint (an open model on vLLM, our
local engine, or the proxy so synthesis transcripts are recorded too). Cost is computed
from the reported token usage and per-million-token prices (zero by default: self-hosted).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from openai import APIError, AsyncOpenAI

from synthesis.runtime.base import AgentResult, AgentTool, Budget, CallGate

log = logging.getLogger(__name__)


def to_openai_tools(tools: list[AgentTool]) -> list[dict[str, Any]]:
    """Our tools as Chat Completions ``tools`` entries."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in tools
    ]


class OpenAIAgent:
    """A tool-calling loop: ask the model, run the tool calls it makes, repeat until it stops."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "none",
        usd_per_mtok_in: float = 0.0,
        usd_per_mtok_out: float = 0.0,
        temperature: float | None = None,
        max_tokens: int | None = 2048,
        client: AsyncOpenAI | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.model = model
        self.usd_in = usd_per_mtok_in
        self.usd_out = usd_per_mtok_out
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.base_url, self.api_key = base_url, api_key
        self._client = client  # injected clients are reused; otherwise one per run (per event loop)
        self._gate = gate  # entered around each request (a paid API's concurrency and rate limits)

    def _cost(self, usage: Any) -> float:
        if usage is None:
            return 0.0
        return (usage.prompt_tokens * self.usd_in + usage.completion_tokens * self.usd_out) / 1e6

    async def run(
        self,
        prompt: str,
        tools: list[AgentTool],
        workdir: Path,
        budget: Budget,
        *,
        system: str | None = None,
    ) -> AgentResult:
        start = time.monotonic()
        result = AgentResult(ok=False)
        client = self._client or AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=2)
        try:
            await asyncio.wait_for(self._loop(client, prompt, tools, workdir, budget, system, result), budget.timeout_s)
        except asyncio.TimeoutError:
            result.ok, result.stop_reason = False, "timeout"
            result.error = f"agent call exceeded {budget.timeout_s:.0f}s"
        except APIError as exc:
            result.ok, result.stop_reason, result.error = False, "error", f"endpoint error: {exc}"
        finally:
            if self._client is None:
                await client.close()
        result.seconds = time.monotonic() - start
        return result

    async def _loop(
        self,
        client: AsyncOpenAI,
        prompt: str,
        tools: list[AgentTool],
        workdir: Path,
        budget: Budget,
        system: str | None,
        result: AgentResult,
    ) -> None:
        by_name = {t.name: t for t in tools}
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": f"{prompt}\n\n(working directory: {workdir})"})
        result.transcript = messages
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        while True:
            if result.turns >= budget.max_turns:
                result.stop_reason, result.error = "max_turns", f"stopped after {result.turns} turns"
                return
            if budget.max_usd is not None and result.cost_usd >= budget.max_usd:
                result.stop_reason = "max_budget"
                result.error = f"spent ${result.cost_usd:.4f} of ${budget.max_usd:.4f}"
                return
            if self._gate is None:
                resp = await client.chat.completions.create(**kwargs)
            else:
                async with self._gate():
                    resp = await client.chat.completions.create(**kwargs)
            result.turns += 1
            result.cost_usd += self._cost(resp.usage)
            msg = resp.choices[0].message
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
            calls = msg.tool_calls or []
            if calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.function.name, "arguments": c.function.arguments}}
                    for c in calls
                ]
            messages.append(entry)
            if not calls:
                result.ok, result.stop_reason, result.final_text = True, "completed", msg.content or ""
                return
            for call in calls:
                result.tool_calls += 1
                tool = by_name.get(call.function.name)
                if tool is None:
                    text = f"error: unknown tool {call.function.name!r} (have: {', '.join(by_name)})"
                else:
                    try:
                        args = json.loads(call.function.arguments or "{}")
                        if not isinstance(args, dict):
                            raise ValueError("arguments must be a JSON object")
                    except ValueError as exc:
                        text = f"error: malformed arguments: {exc}"
                    else:
                        text, _ = await tool.invoke(args)
                log.debug("tool %s -> %s", call.function.name, text[:200])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
