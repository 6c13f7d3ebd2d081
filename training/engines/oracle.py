"""A scripted teacher engine that replays each task's oracle solution as model calls.

Distillation on the embedded defaults has no strong teacher model offline. The oracle of
every claw task (``solution/solve.sh``) is a list of tool calls (``claw TOOL '<json>'``
lines); this engine speaks the policy's own protocol and answers each call of a rollout
with the next step of that plan, then a final answer. Because it renders prompts with the
policy's tokenizer and chat template exactly as the local engine does (and tokenizes its
answers the same way), the recorded calls carry token ids and become SFT samples with no
re-tokenization. It implements :class:`training.engines.base.ChatEngine`.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.engines.base import EngineRequestError

FINAL_ANSWER = "Final answer: done."


@dataclass(frozen=True)
class PlanStep:
    """One step of an oracle plan: a tool call, or (``final`` set) the episode's final reply."""

    tool: str | None
    arguments: dict[str, Any]
    final: str | None = None


_WRAPPER_RE = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{.*environments\.claw\.call")


def parse_oracle_plan(solve_sh: str) -> list[PlanStep]:
    """The tool calls of an oracle script: ``python3 -m environments.claw.call TOOL '<json>'``
    lines, directly or through a shell function wrapping that command (``claw``, ``call``).
    Other lines (comments, ``set``, file writes) are not tool calls and are skipped."""
    lines = solve_sh.splitlines()
    wrappers = {m.group(1) for line in lines if (m := _WRAPPER_RE.match(line))}
    steps: list[PlanStep] = []
    for line in lines:
        if _WRAPPER_RE.match(line):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if words[:3] in (["python3", "-m", "environments.claw.call"], ["python", "-m", "environments.claw.call"]):
            words = words[2:]
        elif not words or words[0] not in wrappers:
            continue
        if len(words) < 2 or words[1].startswith("-"):
            continue
        args: dict[str, Any] = {}
        if len(words) >= 3:
            try:
                parsed = json.loads(words[2])
            except ValueError:
                continue
            if isinstance(parsed, dict):
                args = parsed
        steps.append(PlanStep(words[1], args))
    return steps


def load_plan(task_dir: str | Path) -> list[PlanStep]:
    """A task's oracle plan: ``solution/plan.json`` (``[{"tool", "arguments"} | {"final": text}]``,
    a ``final`` entry being the reply that ends the episode, e.g. a question's answer) when
    present, else the tool calls parsed out of ``solution/solve.sh``; ``[]`` when it has neither."""
    solution = Path(task_dir) / "solution"
    plan_file = solution / "plan.json"
    if plan_file.is_file():
        steps = []
        for i, step in enumerate(json.loads(plan_file.read_text(encoding="utf-8"))):
            if "final" in step:
                steps.append(PlanStep(None, {}, final=str(step["final"])))
            elif "tool" in step:
                steps.append(PlanStep(step["tool"], dict(step.get("arguments") or {})))
            else:
                raise ValueError(f"{plan_file}: step {i}: needs 'tool' (with 'arguments') or 'final'")
        return steps
    solve = solution / "solve.sh"
    return parse_oracle_plan(solve.read_text(encoding="utf-8")) if solve.is_file() else []


def load_plans(task_dirs: list[str | Path]) -> dict[str, list[PlanStep]]:
    """instruction text → oracle plan, for every task dir that has a usable oracle."""
    plans: dict[str, list[PlanStep]] = {}
    for d in task_dirs:
        plan = load_plan(d)
        if plan:
            plans[(Path(d) / "instruction.md").read_text(encoding="utf-8").strip()] = plan
    return plans


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class OracleTeacherEngine:
    """Replays oracle plans in the policy's tool-call format (see module doc)."""

    def __init__(self, plans: dict[str, list[PlanStep]], tokenizer: Any, *, model_name: str = "oracle-teacher") -> None:
        self.plans = plans
        self.tokenizer = tokenizer
        self.model_name = model_name

    @classmethod
    def from_task_dirs(cls, task_dirs: list[str | Path], tokenizer: Any) -> OracleTeacherEngine:
        return cls(load_plans(task_dirs), tokenizer)

    @property
    def policy_version(self) -> int | None:
        return None

    async def list_models(self) -> list[str]:
        return [self.model_name]

    async def aclose(self) -> None:
        return None

    def _plan_for(self, messages: list[dict[str, Any]]) -> list[PlanStep]:
        text = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("user", "system"))
        for instruction, plan in self.plans.items():
            if instruction in text:
                return plan
        raise EngineRequestError("oracle teacher: no task instruction it knows is in these messages", param="messages")

    def _answer(self, step: PlanStep | None, native: bool) -> str:
        if step is None:
            return FINAL_ANSWER
        if step.final is not None:
            return step.final
        if native:
            # exactly as the chat template renders an assistant tool call in the history, so the
            # next call's prompt extends this one's and the trajectory prefix-merges into one sequence
            return "<tool_call>\n" + json.dumps({"name": step.tool, "arguments": step.arguments}, ensure_ascii=False) + "\n</tool_call>"
        return "Action: " + json.dumps({"tool": step.tool, "args": step.arguments}, ensure_ascii=False)

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        from training.engines.local.prompt import render_prompt  # noqa: PLC0415 - needs transformers
        from training.engines.local.tools import parse_tool_calls  # noqa: PLC0415

        messages = body.get("messages") or []
        tools = body.get("tools") or None
        plan = self._plan_for(messages)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        step = plan[done] if done < len(plan) else None
        text = self._answer(step, native=bool(tools))
        prompt_ids = render_prompt(self.tokenizer, messages, tools)
        response_ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        eos = self.tokenizer.eos_token_id
        if eos is not None:
            response_ids.append(int(eos))
        content, tool_calls = parse_tool_calls(text) if tools else (text, [])
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "prompt_token_ids": prompt_ids,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "token_ids": response_ids,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(response_ids),
                "total_tokens": len(prompt_ids) + len(response_ids),
            },
        }
