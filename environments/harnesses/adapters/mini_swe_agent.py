"""``mini-swe-agent``: the PyPI ``mini`` CLI (via litellm, non-streamed chat, one bash tool).

It stops only when the model runs ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``; option
``step_limit`` (default 30) bounds it. The trajectory goes to ``<logs>/agent/mini-traj.json``.
Tool skills go to ``$HOME/skills/<name>/SKILL.md`` and are named in the task text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from environments.harnesses.base import Harness, HarnessContext, HarnessMissing
from environments.harnesses.binaries import tools_dir


def mini_config_file() -> Path | None:
    """The packaged ``minisweagent/config/mini.yaml`` of the tools-dir venv (or None)."""
    for found in sorted(tools_dir().glob("mini-swe-agent/lib/python*/site-packages/minisweagent/config/mini.yaml")):
        return found
    return None


@dataclass(frozen=True)
class MiniSweAgentHarness(Harness):
    name: str = "mini-swe-agent"
    description: str = "mini-swe-agent (mini -y) over OpenAI chat via litellm."
    install_hint: str = "scripts/install-harnesses.sh (PyPI mini-swe-agent==2.4.6 in its own venv)"
    binary: str | None = "mini"

    def skills_dir(self, ctx: HarnessContext) -> Path | None:
        return ctx.home / "skills"

    def command(self, ctx: HarnessContext) -> list[str]:
        binary = self.resolve_binary()
        config = ctx.options.get("config") or mini_config_file()
        if config is None:
            raise HarnessMissing(f"mini-swe-agent: config/mini.yaml not found ({self.install_hint})")
        steps = int(ctx.options.get("step_limit", 30))
        return [str(binary), "-y", "--exit-immediately", "-m", f"openai/{ctx.model}",
                "-c", str(config),
                "-c", f"model.model_kwargs.api_base={ctx.base_url_or_default}",
                "-c", f"agent.step_limit={steps}",
                "-t", ctx.prompt(str(self.skills_dir(ctx))),
                "-o", str(ctx.logs_dir / "mini-traj.json")]

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {
            "OPENAI_API_KEY": ctx.api_key,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_GLOBAL_CONFIG_DIR": str(ctx.home / "mini-swe-agent"),
        }
