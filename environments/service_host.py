"""A task's mock services served from a thread of the calling process (the runner), with
its own event loop: what :class:`~environments.service_group.ServiceGroup` does for a domain
that declares an ASGI app factory (``Domain.app_factory``) instead of starting
``python -m environments.serve``.

Why: a second Python process per rollout (interpreter, pydantic, the ASGI stack) cost
about 0.2 s of CPU per rollout; in the runner, which has most of those modules loaded
already, the same services cost a few tens of ms. What stays as it was: the services live
outside the agent jail (the harness reaches them over loopback HTTP only, and cannot signal
or read the runner); a handler that raises answers 500; a handler that hangs or spins holds
only its own thread (the runner's loop, its timeouts and the verifier go on: Python switches
threads every few ms); an app that cannot be built, a server that stops, or one that is not
healthy within the timeout is a :class:`ServiceHostError` (the runner's
``infra_error/service_failed``); :meth:`ServiceHost.stop` ends the server (graceful for
``grace`` seconds, as the process was TERMed) and a thread that still will not end is left
to die with the process, logged. What the services log at WARNING and above goes to the
services' log file, as the process's stderr did.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Builds the ASGI app hosting ``services`` with fixtures from ``fixtures`` (None: none).
AppFactory = Callable[[list[str], Path | None], Any]


class ServiceHostError(RuntimeError):
    """The app could not be built or served (the runner's ``infra_error/service_failed``)."""


#: Loggers the services' records come from besides the app's own (which reach the root).
_SERVER_LOGGERS = ("uvicorn.error", "uvicorn.asgi")


def _log_targets() -> list[logging.Logger]:
    """Where the services' handler goes so that each of their records reaches it once: the
    root, and for a server logger whose records stop short of the root (a process whose
    logging config sets ``propagate = False`` on ``uvicorn``, as Prefect's does), the last
    logger they do reach."""
    targets = [logging.getLogger()]
    for name in _SERVER_LOGGERS:
        logger = logging.getLogger(name)
        while logger.propagate and logger.parent is not None:
            logger = logger.parent
        if logger not in targets:
            targets.append(logger)
    return targets


class _ThreadRecords(logging.Filter):
    """Only the log records emitted on one thread (the services')."""

    def __init__(self, thread_name: str) -> None:
        super().__init__()
        self.thread_name = thread_name

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName == self.thread_name


class ServiceHost:
    """``url = host.start()`` binds a free loopback port and serves the app on a daemon
    thread; :attr:`failure` says why the thread ended; :meth:`stop` ends it."""

    def __init__(self, factory: AppFactory, services: list[str], fixtures: Path | None, *, log_path: Path,
                 ready_file: Path | None = None, host: str = "127.0.0.1") -> None:
        self.factory = factory
        self.services = services
        self.fixtures = fixtures
        self.log_path = log_path
        self.ready_file = ready_file
        self.host = host
        self.failure: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._handler: logging.Handler | None = None
        self._log_targets: list[logging.Logger] = []
        self._done = threading.Event()

    @property
    def running(self) -> bool:
        """The serving thread has not ended."""
        return self._thread is not None and not self._done.is_set()

    def start(self) -> str:
        """Build the app, bind the port and start serving; the services' URL. Raises
        :class:`ServiceHostError` when the app cannot be built or the port bound."""
        import uvicorn  # noqa: PLC0415 - only runners with services pay for it

        try:
            app = self.factory(self.services, self.fixtures)
        except Exception as exc:  # noqa: BLE001 - any build failure is the services' failure
            raise ServiceHostError(f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((self.host, 0))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise ServiceHostError(f"cannot listen on {self.host}: {exc.strerror}") from None
        url = f"http://{self.host}:{sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off",
                                ws="none", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        name = f"services-{id(self):x}"
        self._attach_log(name)
        self._thread = threading.Thread(target=self._run, args=(sock, url), name=name, daemon=True)
        self._thread.start()
        return url

    def _attach_log(self, thread_name: str) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.log_path, encoding="utf-8")
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(_ThreadRecords(thread_name))
        self._log_targets = _log_targets()
        for target in self._log_targets:
            target.addHandler(handler)
        self._handler = handler

    async def _ended(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self._done.is_set():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def _run(self, sock: socket.socket, url: str) -> None:
        try:
            asyncio.run(self._serve(sock, url))
            if self._server is not None and not self._server.should_exit:
                self.failure = "the server stopped"
        except BaseException as exc:  # noqa: BLE001 - the thread's end is reported, never raised
            self.failure = f"the server failed: {type(exc).__name__}: {exc}"
            log.exception("services %s failed", ",".join(self.services))
        finally:
            sock.close()
            self._done.set()

    async def _serve(self, sock: socket.socket, url: str) -> None:
        server = self._server
        announce = asyncio.create_task(self._announce(server, sock, url))
        try:
            await server.serve(sockets=[sock])
        finally:
            announce.cancel()

    async def _announce(self, server: Any, sock: socket.socket, url: str) -> None:
        """``CLAW_READY <url>`` in the log and ``{"url", "port", "pid"}`` in the ready file
        once listening (what ``python -m environments.serve`` leaves behind)."""
        while not server.started:
            await asyncio.sleep(0.005)
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"CLAW_READY {url}\n")
        if self.ready_file is not None:
            tmp = self.ready_file.with_name(self.ready_file.name + ".tmp")
            tmp.write_text(json.dumps({"url": url, "port": sock.getsockname()[1], "pid": os.getpid()}))
            tmp.replace(self.ready_file)

    async def stop(self, grace: float = 2.0) -> None:
        """End the server: graceful for ``grace`` seconds, then its connections are closed;
        a thread that does not end then (a handler that never returns) is left to die with
        the process, logged."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and not await self._ended(grace + 1.0):
            self._server.force_exit = True
            if not await self._ended(1.0):
                log.warning("services %s: the server thread did not end (a handler still running); "
                            "it ends with the runner", ",".join(self.services))
        if self._handler is not None:
            for target in self._log_targets:
                target.removeHandler(self._handler)
            self._handler.close()
            self._handler = None
