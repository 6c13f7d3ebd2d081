"""CLI of the computer-use harness (what the ``computer-use`` adapter launches, and what a
computer-use task's oracle ``solve.sh`` runs with ``--replay``).

Exit 0 when the episode ran (finished, step limit, no action, or a policy error written to
the outcome file), 1 on an engine/desktop failure (also in the outcome file), 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from environments.computer.spec import load_desktop_spec
from environments.harnesses.base import write_outcome
from environments.harnesses.computer_use.loop import CUConfig, load_plan, run_episode

log = logging.getLogger("environments.harnesses.computer_use")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m environments.harnesses.computer_use")
    p.add_argument("--task-dir", type=Path, help="the task dir (instruction.md, environment/desktop.json)")
    p.add_argument("--instruction-file", type=Path)
    p.add_argument("--replay", type=Path, help="oracle mode: run this actions.json instead of a model")
    p.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", ""))
    p.add_argument("--model", default="policy")
    p.add_argument("--workspace", type=Path, default=Path.cwd())
    p.add_argument("--log-dir", type=Path, default=Path("logs/agent"))
    p.add_argument("--home", type=Path, help="scratch HOME for the desktop apps (default: a temp dir)")
    p.add_argument("--width", type=int)
    p.add_argument("--height", type=int)
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--history-images", type=int, default=3)
    p.add_argument("--image-width", type=int)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--bash-timeout", type=float, default=120.0)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="computer-use %(levelname)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        spec = load_desktop_spec(args.task_dir)
        if args.width:
            spec.width = args.width
        if args.height:
            spec.height = args.height
        instruction_file = args.instruction_file or (args.task_dir / "instruction.md" if args.task_dir else None)
        instruction = instruction_file.read_text(encoding="utf-8") if instruction_file else ""
        plan = load_plan(args.replay) if args.replay else None
    except (OSError, ValueError) as exc:
        log.error("computer-use: %s", exc)
        return 2
    if plan is None and not args.base_url:
        log.error("computer-use: no --base-url (or OPENAI_BASE_URL) and no --replay plan")
        return 2
    home = args.home or Path(tempfile.mkdtemp(prefix="openforge-desktop-home-"))
    cfg = CUConfig(
        instruction=instruction, workspace=args.workspace.resolve(), log_dir=args.log_dir.resolve(), home=home,
        desktop=spec, base_url=args.base_url or None, model=args.model,
        api_key=os.environ.get("OPENAI_API_KEY", "openforge-no-token"), replay=plan, max_steps=args.max_steps,
        history_images=args.history_images, image_width=args.image_width, max_tokens=args.max_tokens,
        temperature=args.temperature, bash_timeout=args.bash_timeout,
    )
    try:
        result = asyncio.run(run_episode(cfg))
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    log.info("computer-use: %s (%s) after %d steps, %d calls, %d actions, %d screenshots", result.status,
             result.terminal, result.steps, result.n_calls, result.actions, result.screenshots)
    return write_outcome(args.log_dir, result.status, result.error_kind, result.error)


if __name__ == "__main__":
    sys.exit(main())
