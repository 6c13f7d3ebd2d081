"""A task's mock services for the length of a rollout (the runner) or a probe
(``environments.browser.probe``): one child process, or — given the domain's ASGI app
factory (``Domain.app_factory``) — a thread of this process (:mod:`environments.service_host`:
the runner saves a second interpreter per rollout).

``task.toml [metadata] services`` names them; fixtures come from
``<task>/environment/fixtures``. One ``python -m environments.serve`` process (the domain
registry picks the domain's launcher: claw services, browser sites) hosts them all on a
free port; we wait for its ready file (or ``CLAW_READY <url>`` line) and ``GET /healthz``,
export ``CLAW_URL`` to the harness and the verifier, and kill its process group at the end.
In a thread: the same ready file, log and ``GET /healthz`` within the timeout; a server
that could not be built or that stops is a :class:`ServiceError` as an exited process is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path
from typing import Self

from environments.domain import SERVE_MODULE
from environments.httpclient import TransportError, request
from environments.procs import spawn, stop_process, tail
from environments.service_host import AppFactory, ServiceHost, ServiceHostError

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
                 cwd: Path, log_path: Path, timeout: float = 60.0, app_factory: AppFactory | None = None) -> None:
        self.services = services
        self.fixtures = fixtures
        self.python = python
        self.env = env
        self.cwd = cwd
        self.log_path = log_path
        self.timeout = timeout
        self.url: str | None = None
        self.ready_file = log_path.with_name(log_path.stem + "-ready.json")
        self.app_factory = app_factory
        self._proc: asyncio.subprocess.Process | None = None
        self._host: ServiceHost | None = None

    def argv(self) -> list[str]:
        argv = [self.python, "-m", SERVE_MODULE, "--services", ",".join(self.services),
                "--host", "127.0.0.1", "--port", "0", "--ready-file", str(self.ready_file)]
        if (fixtures := self._fixtures()) is not None:
            argv += ["--fixtures", str(fixtures)]
        return argv

    def _fixtures(self) -> Path | None:
        return self.fixtures if self.fixtures is not None and self.fixtures.exists() else None

    def _ended(self) -> str | None:
        """Why the services ended before they were healthy (None while they run)."""
        if self._host is not None:
            return None if self._host.running else f"stopped: {self._host.failure or 'the server ended'}"
        if self._proc is not None and self._proc.returncode is not None:
            return f"exited with code {self._proc.returncode}"
        return None

    async def start(self) -> str:
        self.ready_file.unlink(missing_ok=True)
        deadline = time.monotonic() + self.timeout
        if self.app_factory is not None:
            self._host = ServiceHost(self.app_factory, self.services, self._fixtures(), log_path=self.log_path,
                                     ready_file=self.ready_file)
            try:
                self._host.start()  # the URL comes from the ready file, as from the process
            except ServiceHostError as exc:
                self._host = None
                raise ServiceError(f"services {','.join(self.services)} could not start: {exc}") from None
        else:
            self._proc = await spawn(self.argv(), env=self.env, cwd=self.cwd, log_path=self.log_path)
        while time.monotonic() < deadline:
            if (ended := self._ended()) is not None:
                raise ServiceError(f"services {','.join(self.services)} {ended}: "
                                   f"{tail(self.log_path, 600).strip()}")
            if self.url is None:
                self.url = self._ready_url()
            if self.url is not None:
                try:
                    resp = await request("GET", f"{self.url}/healthz", timeout=2.0)
                    if resp.status_code == 200:
                        log.info("services %s healthy at %s", self.services, self.url)
                        return self.url
                except TransportError:
                    pass
            await asyncio.sleep(READY_POLL_S)
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
        if self._host is not None:
            await self._host.stop(grace=2.0)
            self._host = None
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
