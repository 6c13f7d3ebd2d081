"""Follow a runner's stdout: copy the task's tests in on the phase line, parse the report.

Backends feed raw output lines here; every line is also appended to the rollout's
``runner.log`` so what the sandbox printed survives the sandbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from environments.records import RUNNER_REPORT_PREFIX, RunnerReport
from training.orchestrator.backend import PHASE_AGENT_DONE

log = logging.getLogger(__name__)


class RunnerFollower:
    """Consumes runner output lines; ``report`` is set once the result line is seen."""

    def __init__(self, log_path: Path, on_agent_done: Callable[[], Awaitable[None]]) -> None:
        self.log_path = log_path
        self.report: RunnerReport | None = None
        self.report_error: str | None = None
        self.agent_done_at: float | None = None
        self.first_line_at: float | None = None
        self._on_agent_done = on_agent_done
        self._file: IO[str] | None = None

    async def feed(self, line: str) -> None:
        loop = asyncio.get_running_loop()
        if self.first_line_at is None:
            self.first_line_at = loop.time()
        if self._file is None:
            self._file = self.log_path.open("a", encoding="utf-8")
        self._file.write(line if line.endswith("\n") else line + "\n")
        self._file.flush()
        stripped = line.strip()
        if stripped == PHASE_AGENT_DONE and self.agent_done_at is None:
            self.agent_done_at = loop.time()
            await self._on_agent_done()
        elif stripped.startswith(PHASE_AGENT_DONE + " step="):  # a multi-step task's step is done
            if self.agent_done_at is None:
                self.agent_done_at = loop.time()
            await self._on_agent_done(stripped.split("step=", 1)[1])  # type: ignore[call-arg]
        elif stripped.startswith(RUNNER_REPORT_PREFIX.strip()):
            payload = stripped[len(RUNNER_REPORT_PREFIX.strip()):].strip()
            try:
                self.report = RunnerReport.model_validate_json(payload)
            except ValidationError as exc:
                self.report_error = f"unparsable {RUNNER_REPORT_PREFIX.strip()} line: {exc.errors()[:1]}"
                log.warning("%s: %s", self.log_path, self.report_error)

    async def consume(self, lines: AsyncIterator[str]) -> None:
        async for line in lines:
            await self.feed(line)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


async def stream_lines(reader: asyncio.StreamReader) -> AsyncIterator[str]:
    """Decoded lines of an asyncio stream (long lines are not split, undecodable bytes replaced)."""
    while True:
        try:
            raw = await reader.readline()
        except ValueError:  # line longer than the limit: take what is buffered
            raw = await reader.read(1 << 20)
        if not raw:
            return
        yield raw.decode("utf-8", errors="replace")
