"""CLI of the react harness (what the ``react`` adapter launches inside the sandbox).

Exit 0 when the episode ran (finished, step limit, or a policy error written to the outcome
file), 1 on an engine/infra failure (also written to the outcome file), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from environments.harnesses.base import SERVICES_URL_ENV, write_outcome
from environments.harnesses.react.loop import ReactConfig, run_react
from environments.harnesses.react.tools import load_tools_file

log = logging.getLogger("environments.harnesses.react")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m environments.harnesses.react")
    p.add_argument("--instruction-file", type=Path, required=True)
    p.add_argument("--tools-file", type=Path)
    p.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", ""))
    p.add_argument("--model", default="policy")
    p.add_argument("--workspace", type=Path, default=Path.cwd())
    p.add_argument("--log-dir", type=Path, default=Path("logs/agent"))
    p.add_argument("--services-url", default=os.environ.get(SERVICES_URL_ENV))
    p.add_argument("--mode", choices=("auto", "native", "text"), default="auto")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--bash-timeout", type=float, default=120.0)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--top-p", type=float)
    p.add_argument("--no-builtin-tools", action="store_true", help="offer the task's tools only")
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="react %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    if not args.base_url:
        log.error("react: no --base-url (or OPENAI_BASE_URL) given")
        return 2
    cfg = ReactConfig(
        instruction=args.instruction_file.read_text(encoding="utf-8"),
        base_url=args.base_url, model=args.model, workspace=args.workspace.resolve(),
        log_dir=args.log_dir, api_key=os.environ.get("OPENAI_API_KEY", "openforge-no-token"),
        tools=load_tools_file(args.tools_file) if args.tools_file else [],
        services_url=args.services_url, mode=args.mode, max_steps=args.max_steps,
        bash_timeout=args.bash_timeout, max_tokens=args.max_tokens, temperature=args.temperature,
        top_p=args.top_p, builtin_tools=not args.no_builtin_tools,
    )
    result = asyncio.run(run_react(cfg))
    log.info("react: %s after %d steps (%d calls, %d malformed)", result.status, result.steps,
                 result.n_calls, result.malformed)
    return write_outcome(args.log_dir, result.status, result.error_kind, result.error)


if __name__ == "__main__":
    sys.exit(main())
