"""Run a task's mock services as a child process from Python (tests, synthesis checks):
start ``python -m environments.serve`` (claw services or browser sites, the domain registry
decides), wait until it answers ``/healthz``, stop it.

    with ClawServer(["gmail"], fixtures_dir) as srv:   # or ClawServer.for_task(task_dir)
        env = srv.env()                                # {"CLAW_URL": ..., "PORT": ...}
    async with ClawServer(...) as srv: ...             # same, without blocking the loop
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path

from environments.domain import SERVE_MODULE

logger = logging.getLogger(__name__)

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class ClawStartError(RuntimeError):
    """The services did not come up (bad fixtures, port in use, timeout)."""


def task_services(task_dir: str | Path) -> list[str]:
    """Our ``services`` of a task dir's task.toml (``[metadata.openforge]``, or ``[metadata]``
    in tasks we wrote before; no full validation: the sandbox copy of a task has no tests/)."""
    path = Path(task_dir) / "task.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ClawStartError(f"{path}: cannot read services: {exc}") from None
    from environments.taskdir.model import openforge_keys  # noqa: PLC0415 - sibling room

    services = openforge_keys(raw).get("services", [])
    if not isinstance(services, list) or not all(isinstance(s, str) for s in services):
        raise ClawStartError(f"{path}: metadata.openforge.services: expected a list of service names")
    return services


class ClawServer:
    """One claw service process on a loopback port (``port=0``: a free one)."""

    def __init__(
        self,
        services: list[str] | str,
        fixtures: str | Path | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        python: str | None = None,
        startup_timeout: float = 60.0,
        log_path: str | Path | None = None,
    ) -> None:
        self.services = services.split(",") if isinstance(services, str) else list(services)
        self.fixtures = Path(fixtures) if fixtures else None
        self.port = port
        self.host = host
        self.python = python or sys.executable
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path else None
        self.url: str | None = None
        self._proc: subprocess.Popen | None = None
        self._aproc: asyncio.subprocess.Process | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._log = None

    @classmethod
    def for_task(cls, task_dir: str | Path, **kwargs) -> ClawServer:  # noqa: ANN003
        """Services of ``task.toml [metadata] services`` with ``environment/fixtures``."""
        fixtures = Path(task_dir) / "environment" / "fixtures"
        return cls(task_services(task_dir), fixtures if fixtures.exists() else None, **kwargs)

    # -- shared
    def _argv(self, ready: Path) -> list[str]:
        # The one launcher asks the domain registry whose services these are (claw or
        # browser sites); every domain's launcher speaks the same ready protocol.
        argv = [self.python, "-m", SERVE_MODULE, "--services", ",".join(self.services),
                "--host", self.host, "--port", str(self.port), "--ready-file", str(ready)]
        if self.fixtures:
            argv += ["--fixtures", str(self.fixtures)]
        return argv

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        for var in ("PORT", "CLAW_PORT", "CLAW_SERVICES", "CLAW_FIXTURES"):
            env.pop(var, None)
        return env

    def _prepare(self) -> Path:
        self._tmp = tempfile.TemporaryDirectory(prefix="claw-")
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in _cleanup
        else:
            self._log = open(Path(self._tmp.name) / "serve.log", "ab")  # noqa: SIM115
        return Path(self._tmp.name) / "ready.json"

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        try:
            return Path(self._log.name).read_text(errors="replace")[-2000:].strip()
        except OSError:
            return ""

    def _read_ready(self, ready: Path) -> bool:
        if not ready.exists():
            return False
        info = json.loads(ready.read_text())
        self.url = info["url"]
        self.port = int(info["port"])
        return True

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def _cleanup(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def env(self) -> dict[str, str]:
        """Variables a harness / verifier / solve.sh needs to reach the services."""
        if self.url is None:
            raise ClawStartError("claw services not started")
        return {"CLAW_URL": self.url, "PORT": str(self.port)}

    # -- sync
    def start(self) -> ClawServer:
        ready = self._prepare()
        self._proc = subprocess.Popen(self._argv(ready), env=self._child_env(), stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                tail = self._log_tail()
                self.stop()
                raise ClawStartError(f"claw services exited with {code}: {tail}")
            if self._read_ready(ready) and self._healthy():
                logger.info("claw services %s ready at %s", ",".join(self.services), self.url)
                return self
            time.sleep(0.05)
        self.stop()
        raise ClawStartError(f"claw services not ready after {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._cleanup()

    def __enter__(self) -> ClawServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- async (no blocking calls on the event loop)
    async def astart(self) -> ClawServer:
        ready = self._prepare()
        self._aproc = await asyncio.create_subprocess_exec(
            *self._argv(ready), env=self._child_env(), stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._aproc.returncode is not None:
                tail = self._log_tail()
                code = self._aproc.returncode
                await self.astop()
                raise ClawStartError(f"claw services exited with {code}: {tail}")
            if self._read_ready(ready) and await asyncio.to_thread(self._healthy):
                return self
            await asyncio.sleep(0.05)
        await self.astop()
        raise ClawStartError(f"claw services not ready after {self.startup_timeout:.0f}s")

    async def astop(self) -> None:
        proc, self._aproc = self._aproc, None
        if proc is not None and proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=5)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
        self._cleanup()

    async def __aenter__(self) -> ClawServer:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()
