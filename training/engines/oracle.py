"""A scripted teacher engine that replays each task's oracle solution as model calls.

Distillation on the embedded defaults has no strong teacher model offline. The oracle of
every claw task (``solution/solve.sh``) is a list of tool calls (``claw TOOL '<json>'``
lines); this engine speaks the policy's own protocol and answers each call of a rollout
with the next step of that plan, then a final answer. Because it renders prompts with the
policy's tokenizer and chat template exactly as the local engine does (and tokenizes its
answers the same way), the recorded calls carry token ids and become SFT samples with no
re-tokenization. It implements :class:`training.engines.base.ChatEngine`.

A harness that offers no tool of the task but one shell tool (a function with a required
string ``command``, e.g. mini-swe-agent's ``bash``) gets each step as that tool's call: the
skill CLI invocation the task's SKILL.md files teach (``claw-call TOOL '<json>'``: a command
on every harness's PATH, so it works where the shell tool strips ``PYTHONPATH``; see
environments/claw/call.py). When the harness's prompt names a submit command
(`` `echo SENTINEL` ``, e.g. mini's ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), the final
reply is delivered the way that harness ends an episode: a shell call printing the sentinel,
then the reply (``echo SENTINEL && printf '%s\\n' '<reply>'``: mini takes the lines after the
sentinel as the submission); without one, the final reply is plain text as for native tools.
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


_WRAPPER_RE = re.compile(
    r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{.*(?:environments\.claw\.call|claw-call)")
#: The call CLI's spellings: the ``claw-call`` command, or the module run by a python.
_CALL_FORMS = (["claw-call"], ["python3", "-m", "environments.claw.call"], ["python", "-m", "environments.claw.call"])


def parse_oracle_plan(solve_sh: str) -> list[PlanStep]:
    """The tool calls of an oracle script: ``claw-call TOOL '<json>'`` (or ``python3 -m
    environments.claw.call TOOL '<json>'``) lines, directly or through a shell function wrapping
    that command (``claw``, ``call``).
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
        form = next((f for f in _CALL_FORMS if words[:len(f)] == f), None)
        if form is not None:
            words = words[len(form) - 1:]
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


#: A harness's submit command named in its prompt: `` `echo SENTINEL` `` (an upper-case word).
_SUBMIT_RE = re.compile(r"`echo ([A-Z][A-Z0-9_]{7,})`")


def _function(tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    return fn if isinstance(fn.get("name"), str) else None


def tool_names(tools: list[dict[str, Any]] | None) -> set[str]:
    """The function names a request offers."""
    return {fn["name"] for t in tools or [] if (fn := _function(t)) is not None}


def shell_tool(tools: list[dict[str, Any]] | None) -> str | None:
    """The name of the request's one shell tool — a function whose parameters require a
    string ``command`` — or None when it offers none or several."""
    found = []
    for t in tools or []:
        fn = _function(t)
        params = (fn or {}).get("parameters") or {}
        if not isinstance(params, dict):
            continue
        prop = (params.get("properties") or {}).get("command")
        if "command" in (params.get("required") or []) and isinstance(prop, dict) and prop.get("type") == "string":
            found.append(fn["name"])  # type: ignore[index]
    return found[0] if len(found) == 1 else None


def submit_sentinel(messages: list[dict[str, Any]]) -> str | None:
    """The submit command's sentinel a harness's system/user prompt names (see module doc)."""
    for m in messages:
        if m.get("role") in ("system", "user") and (match := _SUBMIT_RE.search(_text(m.get("content")))):
            return match.group(1)
    return None


def skill_command(step: PlanStep) -> str:
    """A tool step as the skill CLI invocation of the claw SKILL.md files (shlex-quoted JSON)."""
    from environments.claw.skills import CALL  # noqa: PLC0415 - loads the service specs

    return f"{CALL} {step.tool} {shlex.quote(json.dumps(step.arguments, ensure_ascii=False))}"


def submit_command(sentinel: str, reply: str) -> str:
    """Print the sentinel, then the reply: mini-swe-agent's submission is the output after it."""
    return f"echo {sentinel} && printf '%s\\n' {shlex.quote(reply)}"


def _hermes(name: str, arguments: dict[str, Any]) -> str:
    # exactly as the chat template renders an assistant tool call in the history, so the
    # next call's prompt extends this one's and the trajectory prefix-merges into one sequence
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


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

    def _answer(self, step: PlanStep | None, tools: list[dict[str, Any]] | None, messages: list[dict[str, Any]]) -> str:
        shell = shell_tool(tools)
        if step is None or step.final is not None:
            reply = FINAL_ANSWER if step is None else str(step.final)
            sentinel = submit_sentinel(messages) if shell else None
            return _hermes(shell, {"command": submit_command(sentinel, reply)}) if shell and sentinel else reply
        if tools and step.tool not in tool_names(tools) and shell:
            return _hermes(shell, {"command": skill_command(step)})
        if tools:
            return _hermes(str(step.tool), step.arguments)
        return "Action: " + json.dumps({"tool": step.tool, "args": step.arguments}, ensure_ascii=False)

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        from training.engines.local.prompt import render_prompt  # noqa: PLC0415 - needs transformers
        from training.engines.local.tools import parse_tool_calls  # noqa: PLC0415

        messages = body.get("messages") or []
        tools = body.get("tools") or None
        plan = self._plan_for(messages)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        step = plan[done] if done < len(plan) else None
        text = self._answer(step, tools, messages)
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
