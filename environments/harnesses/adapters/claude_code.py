"""``claude-code``: Claude Code (npm ``@anthropic-ai/claude-code``) in print mode against the
proxy's Anthropic Messages API.

ANTHROPIC_BASE_URL is the proxy base URL minus ``/v1`` (the client appends /v1/messages), the
rollout token is ANTHROPIC_API_KEY, all state lives in CLAUDE_CONFIG_DIR inside the sandbox.
Option ``allowed_tools`` (list; default Bash, Read, Write, Edit, Glob, Grep, Skill).
Tool skills go to ``$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md``.
Option ``api_timeout_ms`` (default 15 min) is how long Claude Code waits for one answer: its
~21.7k-token first prompt takes minutes to prefill on CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from environments.harnesses.base import Harness, HarnessContext

DEFAULT_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill")
API_TIMEOUT_MS = 900_000


def config_dir(ctx: HarnessContext) -> Path:
    return ctx.home / ".claude"


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
