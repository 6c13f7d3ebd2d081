"""``react``: our own ReACT loop (environments.harnesses.react) over the OpenAI chat API.

It registers the task's tools natively (or through a text protocol), so it needs no
skills. Options: ``mode`` ("auto" | "native" | "text"), ``max_steps`` (30),
``bash_timeout`` (120 s), ``max_tokens``, ``temperature``, ``top_p``, ``builtin_tools``
(true: bash / read_file / write_file besides the task's tools; false: the task's only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from environments.harnesses.base import (
    Harness,
    HarnessContext,
    dump_json,
    python_executable,
    pythonpath_with_package,
)


@dataclass(frozen=True)
class ReactHarness(Harness):
    name: str = "react"
    description: str = "OpenForge's ReACT loop over OpenAI chat (native tools or text actions)."

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {
            ctx.home / "react" / "instruction.md": ctx.instruction,
            ctx.home / "react" / "tools.json": dump_json(ctx.tools),
        }

    def command(self, ctx: HarnessContext) -> list[str]:
        o = ctx.options
        argv = [python_executable(), "-m", "environments.harnesses.react",
                "--instruction-file", str(ctx.home / "react" / "instruction.md"),
                "--tools-file", str(ctx.home / "react" / "tools.json"),
                "--base-url", ctx.base_url_or_default, "--model", ctx.model,
                "--workspace", str(ctx.workspace), "--log-dir", str(ctx.logs_dir),
                "--mode", str(o.get("mode", "auto")),
                "--max-steps", str(int(o.get("max_steps", 30))),
                "--bash-timeout", str(float(o.get("bash_timeout", 120)))]
        if "max_tokens" in o:
            argv += ["--max-tokens", str(int(o["max_tokens"]))]
        if "temperature" in o:
            argv += ["--temperature", str(float(o["temperature"]))]
        if not o.get("builtin_tools", True):
            argv.append("--no-builtin-tools")
        if "top_p" in o:
            argv += ["--top-p", str(float(o["top_p"]))]
        if ctx.services_url:
            argv += ["--services-url", ctx.services_url]
        return argv

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {"OPENAI_API_KEY": ctx.api_key, "PYTHONPATH": pythonpath_with_package()}
