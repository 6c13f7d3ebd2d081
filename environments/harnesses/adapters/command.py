"""``command``: any CLI harness from a template.

Options: ``template`` (a shell-like string, split with shlex *before* substitution so a
multi-word instruction stays one argument) or ``argv`` (a list), ``env`` (a dict; values
are templates too), ``skills_dir`` (optional, where to write SKILL.md folders; a template).
Placeholders: {instruction} {instruction_file} {base_url} {anthropic_base_url} {token}
{model} {workspace} {logs_dir} {home}. Unknown ``{...}`` text is left alone (JSON is safe).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from environments.harnesses.base import Harness, HarnessConfigError, HarnessContext

_PLACEHOLDER = re.compile(r"\{(instruction|instruction_file|base_url|anthropic_base_url|token|model|workspace|logs_dir|home)\}")


def _values(ctx: HarnessContext, prompt: str) -> dict[str, str]:
    return {
        "instruction": prompt,
        "instruction_file": str(ctx.home / "instruction.md"),
        "base_url": ctx.base_url_or_default,
        "anthropic_base_url": ctx.anthropic_base_url,
        "token": ctx.api_key,
        "model": ctx.model,
        "workspace": str(ctx.workspace),
        "logs_dir": str(ctx.logs_dir),
        "home": str(ctx.home),
    }


def render(template: str, values: dict[str, str]) -> str:
    """Replace the known placeholders only."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


@dataclass(frozen=True)
class CommandHarness(Harness):
    name: str = "command"
    description: str = "Any CLI harness from a command template (option 'template' or 'argv')."

    def _prompt(self, ctx: HarnessContext) -> str:
        where = self.skills_dir(ctx)
        return ctx.prompt(str(where) if where else None)

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {ctx.home / "instruction.md": self._prompt(ctx)}

    def command(self, ctx: HarnessContext) -> list[str]:
        values = _values(ctx, self._prompt(ctx))
        if "argv" in ctx.options:
            argv = ctx.options["argv"]
            if not isinstance(argv, list) or not argv:
                raise HarnessConfigError("command: option 'argv' must be a non-empty list")
            parts = [str(a) for a in argv]
        elif isinstance(ctx.options.get("template"), str) and ctx.options["template"].strip():
            parts = shlex.split(ctx.options["template"])
        else:
            raise HarnessConfigError("command: set harness option 'template' (string) or 'argv' (list)")
        return [render(p, values) for p in parts]

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        extra = ctx.options.get("env") or {}
        if not isinstance(extra, dict):
            raise HarnessConfigError("command: option 'env' must be an object")
        values = _values(ctx, self._prompt(ctx))
        return {str(k): render(str(v), values) for k, v in extra.items()}

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        where = ctx.options.get("skills_dir")
        if not where:
            return None
        return Path(render(str(where), _values(ctx, "")))
