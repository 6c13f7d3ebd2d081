"""A task's mock services as one child process for the length of a rollout (the runner) or
a probe (``environments.browser.probe``).

``task.toml [metadata] services`` names them; fixtures come from
``<task>/environment/fixtures``. One ``python -m environments.serve`` process (the domain
registry picks the domain's launcher: claw services, browser sites) hosts them all on a
free port; we wait for its ready file (or ``CLAW_READY <url>`` line) and ``GET /healthz``,
export ``CLAW_URL`` to the harness and the verifier, and kill its process group at the end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path
from typing import Self

import httpx

from environments.domain import SERVE_MODULE
from environments.httpclient import ClientsByScheme
from environments.procs import spawn, stop_process, tail

log = logging.getLogger(__name__)

_READY = re.compile(r"CLAW_READY\s+(\S+)")
#: How often the ready file (then /healthz) is looked at: every rollout's harness waits for it,
#: so a 0.1 s poll added 50 ms on average to each one's start; a poll is a stat and a small read.
READY_POLL_S = 0.02


class ServiceError(RuntimeError):
    """The services did not come up healthy (an infra error: service_failed)."""


class ServiceGroup:
    """``async with ServiceGroup(...) as group: group.url``; always stopped on exit."""

    def __init__(self, services: list[str], fixtures: Path | None, *, python: str, env: dict[str, str],
                 cwd: Path, log_path: Path, timeout: float = 60.0) -> None:
        self.services = services
        self.fixtures = fixtures
        self.python = python
        self.env = env
        self.cwd = cwd
        self.log_path = log_path
        self.timeout = timeout
        self.url: str | None = None
        self.ready_file = log_path.with_name(log_path.stem + "-ready.json")
        self._proc: asyncio.subprocess.Process | None = None

    def argv(self) -> list[str]:
        argv = [self.python, "-m", SERVE_MODULE, "--services", ",".join(self.services),
                "--host", "127.0.0.1", "--port", "0", "--ready-file", str(self.ready_file)]
        if self.fixtures is not None and self.fixtures.exists():
            argv += ["--fixtures", str(self.fixtures)]
        return argv

    async def start(self) -> str:
        self.ready_file.unlink(missing_ok=True)
        self._proc = await spawn(self.argv(), env=self.env, cwd=self.cwd, log_path=self.log_path)
        deadline = time.monotonic() + self.timeout
        clients = ClientsByScheme(timeout=2.0)  # the services' URL is plain http: no TLS context to load
        try:
            while time.monotonic() < deadline:
                if self._proc.returncode is not None:
                    raise ServiceError(f"services {','.join(self.services)} exited with code "
                                       f"{self._proc.returncode}: {tail(self.log_path, 600).strip()}")
                if self.url is None:
                    self.url = self._ready_url()
                if self.url is not None:
                    try:
                        resp = await clients.for_url(self.url).get(f"{self.url}/healthz")
                        if resp.status_code == 200:
                            log.info("services %s healthy at %s", self.services, self.url)
                            return self.url
                    except httpx.HTTPError:
                        pass
                await asyncio.sleep(READY_POLL_S)
        finally:
            await clients.aclose()
        raise ServiceError(f"services {','.join(self.services)} not healthy after {self.timeout:.0f}s: "
                           f"{tail(self.log_path, 600).strip()}")

    def _ready_url(self) -> str | None:
        """The URL from the ready file (``{"url", "port", "pid"}``), else from ``CLAW_READY``."""
        try:
            url = json.loads(self.ready_file.read_text(encoding="utf-8")).get("url")
            if isinstance(url, str) and url:
                return url.rstrip("/")
        except (OSError, ValueError, AttributeError):
            pass
        found = _READY.findall(tail(self.log_path, 20_000))
        return found[-1].rstrip("/") if found else None

    async def stop(self) -> None:
        if self._proc is not None:
            await stop_process(self._proc, grace=2.0)
            self._proc = None

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
