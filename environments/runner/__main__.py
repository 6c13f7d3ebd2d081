"""``python -m environments.runner``: run one rollout, POST the report to the proxy's finish
endpoint (when a base URL and token are known), print ``OPENFORGE_RESULT {json}`` as the last
stdout line. Exit 0 whenever a report was printed. SIGTERM/SIGINT stop every child first."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from environments.records import ErrorKind, Outcome, RunnerReport
from environments.runner.finish import post_finish, take_finish_key
from environments.runner.options import RunnerOptions, parse_options
from environments.runner.rollout import report_line, run_rollout

log = logging.getLogger("environments.runner")


async def _main(opts: RunnerOptions, finish_key: str | None = None) -> RunnerReport:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if task is not None:
            loop.add_signal_handler(sig, task.cancel)
    try:
        report = await run_rollout(opts)
    except asyncio.CancelledError:
        report = RunnerReport(status=Outcome.infra_error, error_kind=ErrorKind.cancelled.value,
                              error="runner cancelled by a signal", harness=opts.harness)
    if opts.base_url and opts.token:
        ok = await post_finish(opts.base_url, opts.token, report, finish_key=finish_key)
        if not ok:
            log.warning("could not report the outcome to the proxy; stdout report only")
    return report


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("OPENFORGE_RUNNER_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="runner %(levelname)s %(name)s: %(message)s")
    finish_key = take_finish_key()  # out of the environment before any harness or verifier starts
    opts = parse_options(argv)
    report = asyncio.run(_main(opts, finish_key))
    sys.stdout.write(report_line(report) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
