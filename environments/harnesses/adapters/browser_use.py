"""``browser-use``: OpenForge's MolmoWeb-style browser agent
(``python -m environments.harnesses.browser_use``): screenshots in, one JSON action of
Table A3 out, over OpenAI chat through the proxy.

Options: ``max_steps`` (30), ``action_timeout`` (15 s), ``task_timeout`` (1200 s; the
runner's agent timeout still kills it), ``max_tokens`` (512), ``temperature``, ``keep_images`` (1),
``start_url`` (default: ``environment/browser.json``'s), ``cdp_url`` (attach to a remote
browser instead of the local Chromium), ``chromium`` (executable path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from environments.harnesses.base import (
    Harness,
    HarnessContext,
    python_executable,
    pythonpath_with_package,
)

#: A task's browser settings: ``{"start_url": "http://shop.test/"}``.
BROWSER_FILE = "environment/browser.json"


def task_start_url(task_dir: Path) -> str | None:
    path = task_dir / BROWSER_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    url = data.get("start_url") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url else None


@dataclass(frozen=True)
class BrowserUseHarness(Harness):
    name: str = "browser-use"
    description: str = "OpenForge's browser agent: Chromium screenshots in, JSON Table A3 actions out (OpenAI chat)."

    def files(self, ctx: HarnessContext) -> dict[Path, str]:
        return {ctx.home / "browser-use" / "instruction.md": ctx.instruction}

    def command(self, ctx: HarnessContext) -> list[str]:
        o = ctx.options
        argv = [python_executable(), "-m", "environments.harnesses.browser_use",
                "--instruction-file", str(ctx.home / "browser-use" / "instruction.md"),
                "--base-url", ctx.base_url_or_default, "--model", ctx.model, "--log-dir", str(ctx.logs_dir),
                "--max-steps", str(int(o.get("max_steps", 30))),
                "--action-timeout", str(float(o.get("action_timeout", 15))),
                "--max-tokens", str(int(o.get("max_tokens", 512))),
                "--keep-images", str(int(o.get("keep_images", 1)))]
        if "task_timeout" in o:
            argv += ["--task-timeout", str(float(o["task_timeout"]))]
        if "temperature" in o:
            argv += ["--temperature", str(float(o["temperature"]))]
        start = o.get("start_url") or task_start_url(ctx.task_dir)
        if start:
            argv += ["--start-url", str(start)]
        if ctx.services_url:
            argv += ["--sites-url", ctx.services_url]
        if o.get("cdp_url"):
            argv += ["--cdp-url", str(o["cdp_url"])]
        if o.get("chromium"):
            argv += ["--chromium", str(o["chromium"])]
        return argv

    def env(self, ctx: HarnessContext) -> dict[str, str]:
        return {"OPENAI_API_KEY": ctx.api_key, "PYTHONPATH": pythonpath_with_package()}
