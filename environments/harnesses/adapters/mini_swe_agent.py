"""``mini-swe-agent``: the PyPI ``mini`` CLI (via litellm, non-streamed chat, one bash tool).

It stops only when the model runs ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``; option
``step_limit`` (default 30) bounds it. The trajectory goes to ``<logs>/agent/mini-traj.json``.
Tool skills go to ``$HOME/skills/<name>/SKILL.md`` and are named in the task text.

Final reply (:meth:`MiniSweAgentHarness.final_reply`): mini's own submission — the output
lines after the ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` line of the submitting command
(``info.submission`` of the trajectory, exit status ``Submitted``); when that is empty (the
model ran the bare ``echo``, as mini's prompt asks), the text of the assistant message that
submitted. An episode that did not submit (step limit, format errors) delivers no reply.

Model-call attempts (option ``model_attempts``, default 2): mini retries every failed call but
a few kinds (tenacity, exponential wait 4–60 s, 10 attempts by default), the proxy's HTTP 400
``rollout_budget_exhausted`` included, so a rollout whose generation budget was spent sat
~6 min in retries before it exited (seen in the mini learning check: every GRPO step waited
for them). With 2 attempts it exits ~4 s after the refusal; the runner classifies the
refusal (environments/runner/classify.py) and the verifier runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.harnesses.base import Harness, HarnessContext, HarnessMissing, read_log_text
from environments.harnesses.binaries import tools_dir


TRAJECTORY_FILE = "mini-traj.json"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def submitted_reply(trajectory: dict[str, Any]) -> str | None:
    """The final reply of a mini-swe-agent trajectory (see module doc); None if it did not submit."""
    info = trajectory.get("info") or {}
    if info.get("exit_status") != "Submitted":
        return None
    submission = str(info.get("submission") or "").strip()
    if submission:
        return submission
    for message in reversed(trajectory.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _text(message.get("content")).strip()
    return ""


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
                "-o", str(ctx.logs_dir / TRAJECTORY_FILE)]

    def final_reply(self, ctx: HarnessContext) -> str | None:
        text = read_log_text(ctx.logs_dir / TRAJECTORY_FILE)
        if text is None:
            return None
        data = json.loads(text)
        return submitted_reply(data) if isinstance(data, dict) else None

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {
            "OPENAI_API_KEY": ctx.api_key,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_GLOBAL_CONFIG_DIR": str(ctx.home / "mini-swe-agent"),
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(int(ctx.options.get("model_attempts", 2))),
        }
