"""Stage progress of a running flow, for whoever shows it (the CLI's rich progress bar).

Flows call :func:`stage`; when the CLI runs a flow in-process it installs a reporter, in
a deployment run nobody does and only the Prefect log line remains.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("openforge.progress")

_reporter: Callable[[str, int, int], None] | None = None


def set_reporter(reporter: Callable[[str, int, int], None] | None) -> None:
    global _reporter  # noqa: PLW0603 - one process-wide hook
    _reporter = reporter


def stage(name: str, index: int, total: int) -> None:
    log.info("stage %d/%d: %s", index, total, name)
    if _reporter is not None:
        _reporter(name, index, total)
