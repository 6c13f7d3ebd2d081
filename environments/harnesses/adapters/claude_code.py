"""``claude-code``: Claude Code (npm ``@anthropic-ai/claude-code``) in print mode against the
proxy's Anthropic Messages API.

ANTHROPIC_BASE_URL is the proxy base URL minus ``/v1`` (the client appends /v1/messages), the
rollout token is ANTHROPIC_API_KEY, all state lives in CLAUDE_CONFIG_DIR inside the sandbox.
Option ``allowed_tools`` (list; default Bash, Read, Write, Edit, Glob, Grep, Skill).
Tool skills go to ``$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md``.
Option ``api_timeout_ms`` (default 15 min) is how long Claude Code waits for one answer: its
~21.7k-token first prompt takes minutes to prefill on CPU.

Final reply (:meth:`ClaudeCodeHarness.final_reply`): with ``--output-format json`` Claude Code
prints one result object on stdout when it ends,
``{"type": "result", "subtype": "success", "is_error": false, "result": "<final text>", ...}``
(with ``--verbose`` a one-line array of all messages ending in it; with ``stream-json`` one
object per line, the result last). The runner captures stdout in the agent log; the reply is
``result`` of the last result object there. A run that ended in an error delivers no reply:
``is_error`` true (an API failure: ``result`` is then Claude Code's "API Error: ..." text, not
the model's), a subtype other than ``success`` (``error_max_turns``, ``error_during_execution``:
no ``result``), or no result object at all (killed, crashed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.harnesses.base import Harness, HarnessContext, last_json_value, read_agent_log

DEFAULT_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill")
API_TIMEOUT_MS = 900_000


def config_dir(ctx: HarnessContext) -> Path:
    return ctx.home / ".claude"


def _is_result(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "result" and isinstance(value.get("subtype"), str)


def result_message(log_text: str) -> dict[str, Any] | None:
    """The last Claude Code result object in its output (see module doc), or None."""
    found = last_json_value(log_text, lambda v: _is_result(v) or (isinstance(v, list) and any(map(_is_result, v))))
    if isinstance(found, list):  # --verbose --output-format json: every message, the result last
        found = [m for m in found if _is_result(m)][-1]
    return found


def result_reply(result: dict[str, Any]) -> str | None:
    """The final text of a result object; None for an error result (see module doc)."""
    text = result.get("result")
    if result.get("subtype") != "success" or result.get("is_error") or not isinstance(text, str):
        return None
    return text.strip()


@dataclass(frozen=True)
class ClaudeCodeHarness(Harness):
    name: str = "claude-code"
    description: str = "Anthropic Claude Code CLI (claude -p) over the Messages API."
    install_hint: str = "scripts/install-harnesses.sh (npm @anthropic-ai/claude-code) or the claude extra"
    binary: str | None = "claude"

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        return config_dir(ctx) / "skills"

    def command(self, ctx: HarnessContext) -> list[str]:
        tools = ctx.options.get("allowed_tools") or list(DEFAULT_TOOLS)
        # The prompt goes right after -p: --allowedTools is variadic and must come last.
        return [str(self.resolve_binary()), "-p", ctx.prompt(str(self.skills_dir(ctx))),
                "--model", ctx.model, "--output-format", "json",
                *[str(a) for a in ctx.options.get("extra_args", [])],
                "--allowedTools", ",".join(str(t) for t in tools)]

    def final_reply(self, ctx: HarnessContext) -> str | None:
        text = read_agent_log(ctx)
        result = result_message(text) if text is not None else None
        return result_reply(result) if result is not None else None

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": ctx.anthropic_base_url,
            "ANTHROPIC_API_KEY": ctx.api_key,
            "CLAUDE_CONFIG_DIR": str(config_dir(ctx)),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",
            "API_TIMEOUT_MS": str(int(ctx.options.get("api_timeout_ms", API_TIMEOUT_MS))),
        }
