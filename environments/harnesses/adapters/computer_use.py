"""``computer-use``: our screenshot-only desktop agent (environments.harnesses.computer_use)
over the OpenAI chat API, with the ``computer``, ``bash`` and ``str_replace_editor`` tools.

It starts its own Xvfb desktop inside the sandbox (screen size and apps from the task's
``environment/desktop.json``). Options: ``max_steps`` (30), ``history_images`` (3),
``image_width`` (downscale sent screenshots), ``width``/``height`` (override the task's),
``max_tokens``, ``temperature``, ``bash_timeout`` (120 s).
"""

from __future__ import annotations

from dataclasses import dataclass

from environments.harnesses.base import (
    Harness,
    HarnessContext,
    python_executable,
    pythonpath_with_package,
)

_INT_OPTIONS = {"max_steps": "--max-steps", "history_images": "--history-images", "image_width": "--image-width",
                "width": "--width", "height": "--height", "max_tokens": "--max-tokens"}
_FLOAT_OPTIONS = {"temperature": "--temperature", "bash_timeout": "--bash-timeout"}


@dataclass(frozen=True)
class ComputerUseHarness(Harness):
    name: str = "computer-use"
    description: str = "Screenshot-only desktop agent (Xvfb + xdotool) over OpenAI chat with image parts."

    def command(self, ctx: HarnessContext) -> list[str]:
        argv = [python_executable(), "-m", "environments.harnesses.computer_use",
                "--task-dir", str(ctx.task_dir), "--base-url", ctx.base_url_or_default, "--model", ctx.model,
                "--workspace", str(ctx.workspace), "--log-dir", str(ctx.logs_dir), "--home", str(ctx.home / "desktop")]
        for key, flag in _INT_OPTIONS.items():
            if key in ctx.options:
                argv += [flag, str(int(ctx.options[key]))]
        for key, flag in _FLOAT_OPTIONS.items():
            if key in ctx.options:
                argv += [flag, str(float(ctx.options[key]))]
        return argv

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {"OPENAI_API_KEY": ctx.api_key, "PYTHONPATH": pythonpath_with_package()}
