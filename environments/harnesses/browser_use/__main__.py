"""CLI of the browser-use harness (what the ``browser-use`` adapter launches in the sandbox).

Exit 0 when the episode ran (terminated, answered, step limit, timeout, or a policy error
written to the outcome file), 1 on an engine/browser failure (also in the outcome file),
2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from environments.browser.session import BrowserConfig
from environments.harnesses.base import SERVICES_URL_ENV, write_outcome
from environments.harnesses.browser_use.loop import BrowserUseConfig, run_browser_use

log = logging.getLogger("environments.harnesses.browser_use")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m environments.harnesses.browser_use")
    p.add_argument("--instruction-file", type=Path, required=True)
    p.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", ""))
    p.add_argument("--model", default="policy")
    p.add_argument("--log-dir", type=Path, default=Path("logs/agent"))
    p.add_argument("--sites-url", default=os.environ.get(SERVICES_URL_ENV), help="mock websites' server (maps *.test)")
    p.add_argument("--cdp-url", default=os.environ.get("OPENFORGE_BROWSER_CDP_URL"), help="attach to a remote browser")
    p.add_argument("--chromium", default=os.environ.get("OPENFORGE_CHROMIUM", "/usr/bin/chromium"))
    p.add_argument("--start-url")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--action-timeout", type=float, default=15.0)
    p.add_argument("--task-timeout", type=float, default=1200.0)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float)
    p.add_argument("--keep-images", type=int, default=1)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="browser-use %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    if not args.base_url:
        log.error("browser-use: no --base-url (or OPENAI_BASE_URL) given")
        return 2
    cfg = BrowserUseConfig(
        instruction=args.instruction_file.read_text(encoding="utf-8"), base_url=args.base_url, model=args.model,
        log_dir=args.log_dir, api_key=os.environ.get("OPENAI_API_KEY", "openforge-no-token"),
        browser=BrowserConfig(executable=args.chromium, sites_url=args.sites_url, cdp_url=args.cdp_url or None,
                              navigation_timeout=args.action_timeout),
        start_url=args.start_url, max_steps=args.max_steps, action_timeout=args.action_timeout,
        task_timeout=args.task_timeout, max_tokens=args.max_tokens, temperature=args.temperature,
        keep_images=max(args.keep_images, 1),
    )
    result = asyncio.run(run_browser_use(cfg))
    log.info("browser-use: %s after %d steps (%d calls, %d malformed, %d failed actions, %d screenshots)",
             result.status, result.steps, result.n_calls, result.malformed, result.failed_actions, result.screenshots)
    return write_outcome(args.log_dir, result.status, result.error_kind, result.error)


if __name__ == "__main__":
    sys.exit(main())
