"""``zeroclaw``: ZeroClaw (Rust claw agent), written from its public docs and UNTESTED here
(no registry reachable from this machine ships it). Running it without the binary is a
clear ``infra_error/harness_missing``.

Per ZeroClaw's docs: config ``$ZEROCLAW_CONFIG_DIR/config.toml`` with
``default_provider = "custom:<OpenAI-compatible base URL>"``, ``api_key``, ``default_model``;
one-shot run ``zeroclaw agent -m "message"``. Option ``provider``: "custom" (OpenAI chat,
default) or "anthropic-custom" (Messages API, base URL without /v1). Skills go to the
workspace-level skills dir of its config dir.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomli_w

from environments.harnesses.base import Harness, HarnessConfigError, HarnessContext


def config_dir(ctx: HarnessContext) -> Path:
    return ctx.home / ".zeroclaw"


def zeroclaw_config(ctx: HarnessContext) -> dict:
    kind = str(ctx.options.get("provider", "custom"))
    if kind == "custom":
        provider = f"custom:{ctx.base_url_or_default}"
    elif kind == "anthropic-custom":
        provider = f"anthropic-custom:{ctx.anthropic_base_url}"
    else:
        raise HarnessConfigError("zeroclaw: option 'provider' must be 'custom' or 'anthropic-custom'")
    return {
        "default_provider": provider,
        "api_key": ctx.api_key,
        "default_model": ctx.model,
        "autonomy": {"level": "full", "workspace_only": False},
    }


@dataclass(frozen=True)
class ZeroClawHarness(Harness):
    name: str = "zeroclaw"
    description: str = "ZeroClaw agent (zeroclaw agent -m); untested here."
    install_hint: str = "not installable from reachable registries: put a zeroclaw binary on PATH"
    binary: str | None = "zeroclaw"
    tested: bool = False

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        return config_dir(ctx) / "workspace" / "skills"

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {config_dir(ctx) / "config.toml": tomli_w.dumps(zeroclaw_config(ctx))}

    def command(self, ctx: HarnessContext) -> list[str]:
        return [str(self.resolve_binary()), "agent", "-m", ctx.prompt(str(self.skills_dir(ctx)))]

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {"ZEROCLAW_CONFIG_DIR": str(config_dir(ctx)), "ZEROCLAW_API_KEY": ctx.api_key,
                "ZEROCLAW_WORKSPACE": str(ctx.workspace)}
