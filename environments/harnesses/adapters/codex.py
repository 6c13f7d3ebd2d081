"""``codex``: the Codex CLI (npm ``@openai/codex``) against the proxy's Responses API.

Codex ignores OPENAI_BASE_URL; it gets a custom provider in ``$CODEX_HOME/config.toml``
(``wire_api = "responses"``) whose ``env_key`` names the env var holding the rollout token.
We are already inside a sandbox, so Codex's own sandbox is bypassed by default
(option ``sandbox``: "bypass" | "workspace-write" | "danger-full-access" | "read-only").
Tool skills go to ``$CODEX_HOME/skills/<name>/SKILL.md``.
Final reply: the agent's last message, which ``codex exec -o FILE`` writes
(``<logs>/agent/codex-last-message.txt``).
The proxy answers a stream only once the engine is done (a 10-20k-token prompt can take
minutes to prefill on CPU), so the provider waits ``stream_idle_timeout_ms`` (option,
default 15 min; the runner's agent timeout still bounds the rollout).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomli_w

from environments.harnesses.base import Harness, HarnessConfigError, HarnessContext, read_log_text

KEY_ENV = "OPENFORGE_CODEX_KEY"
LAST_MESSAGE_FILE = "codex-last-message.txt"
IDLE_TIMEOUT_MS = 900_000
_SANDBOXES = ("bypass", "workspace-write", "danger-full-access", "read-only")


def codex_home(ctx: HarnessContext) -> Path:
    return ctx.home / ".codex"


def codex_config(ctx: HarnessContext) -> dict:
    return {
        "model": ctx.model,
        "model_provider": "openforge",
        "approval_policy": "never",
        "model_providers": {
            "openforge": {
                "name": "OpenForge proxy",
                "base_url": ctx.base_url_or_default,
                "env_key": KEY_ENV,
                "wire_api": "responses",
                "stream_idle_timeout_ms": int(ctx.options.get("stream_idle_timeout_ms", IDLE_TIMEOUT_MS)),
            }
        },
    }


@dataclass(frozen=True)
class CodexHarness(Harness):
    name: str = "codex"
    description: str = "OpenAI Codex CLI (codex exec) over the Responses API."
    install_hint: str = "scripts/install-harnesses.sh (npm @openai/codex)"
    binary: str | None = "codex"

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        return codex_home(ctx) / "skills"

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {codex_home(ctx) / "config.toml": tomli_w.dumps(codex_config(ctx))}

    def command(self, ctx: HarnessContext) -> list[str]:
        sandbox = str(ctx.options.get("sandbox", "bypass"))
        if sandbox not in _SANDBOXES:
            raise HarnessConfigError(f"codex: option 'sandbox' must be one of {', '.join(_SANDBOXES)}")
        argv = [str(self.resolve_binary()), "exec", "--skip-git-repo-check", "--json",
                "-C", str(ctx.workspace), "-m", ctx.model,
                "-o", str(ctx.logs_dir / LAST_MESSAGE_FILE)]
        if sandbox == "bypass":
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        else:
            argv += ["-s", sandbox]
        argv += [str(a) for a in ctx.options.get("extra_args", [])]
        argv.append(ctx.prompt(str(self.skills_dir(ctx))))
        return argv

    def final_reply(self, ctx: HarnessContext) -> str | None:
        text = read_log_text(ctx.logs_dir / LAST_MESSAGE_FILE)
        return text.strip() if text is not None else None

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {"CODEX_HOME": str(codex_home(ctx)), KEY_ENV: ctx.api_key}
