"""The control endpoint rollout pods talk to (besides the proxy): assignments, tests, logs.

Every pod holds one secret *pod key* (from its Secret). With it, ``pod_entry.py`` asks:

- ``GET /v1/assignment?wait=S`` — long poll for its rollout (runner argv, env, the task's
  visible files, the solution for the oracle). A cold pod's assignment is set before the
  pod is created; a warm-pool pod parks here until a rollout claims it;
- ``POST /v1/agent-done`` — the runner printed ``OPENFORGE_PHASE agent_done``: the answer is
  the task's ``tests/`` as a tar, which is how tests reach a pod only after the agent phase;
- ``POST /v1/logs`` — a tar of the pod's ``/logs`` at the end, kept under the rollout's
  host logs dir (the pod and its emptyDirs are deleted).

Served by ``aiohttp.web`` on the backend's own event loop (no thread, no signal handlers).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import socket
import tarfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)


@dataclass
class Assignment:
    """What a pod runs: sent as JSON (archives base64) on its assignment poll."""

    rollout_id: str
    argv: list[str]  # argv[0] is replaced by the pod's own interpreter
    env: dict[str, str]
    workdir: str
    task_tar: bytes
    solution_tar: bytes | None = None
    task_dir: str = "/task"
    tests_dir: str = "/tests"
    logs_dir: str = "/logs"
    solution_dir: str = "/solution"

    def as_json(self) -> dict[str, Any]:
        return {"rollout_id": self.rollout_id, "argv": self.argv, "env": self.env, "workdir": self.workdir,
                "task_dir": self.task_dir, "tests_dir": self.tests_dir, "logs_dir": self.logs_dir,
                "solution_dir": self.solution_dir,
                "task_tar": base64.b64encode(self.task_tar).decode(),
                "solution_tar": base64.b64encode(self.solution_tar).decode() if self.solution_tar else None}


@dataclass
class PodSlot:
    """The control side of one pod."""

    key: str
    pod_name: str
    assignment: asyncio.Future[Assignment] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    polled: asyncio.Event = field(default_factory=asyncio.Event)  # the pod's entry is up and asking
    fetched_at: float | None = None  # monotonic time the assignment went out
    agent_done_at: float | None = None
    tests: Callable[[], Awaitable[bytes]] | None = None  # builds the tests tar (on agent-done)
    logs_dir: Path | None = None  # where the pod's /logs tar is unpacked

    def assign(self, assignment: Assignment, *, tests: Callable[[], Awaitable[bytes]], logs_dir: Path) -> None:
        self.tests, self.logs_dir = tests, logs_dir
        if not self.assignment.done():
            self.assignment.set_result(assignment)


def tar_dir(root: Path, *, skip_top: tuple[str, ...] = (), max_bytes: int = 64 << 20) -> bytes:
    """A tar of ``root``'s contents (no ``__pycache__``/``.git``; top-level ``skip_top`` left
    out); ``test.sh`` is stored last. Raises ``ValueError`` past ``max_bytes``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        entries = sorted(p for p in root.iterdir() if p.name not in skip_top and p.name not in ("__pycache__", ".git"))
        entries.sort(key=lambda p: p.name == "test.sh")
        for entry in entries:
            tar.add(entry, arcname=entry.name, filter=lambda ti: None if ti.name.rsplit("/", 1)[-1] in
                    ("__pycache__", ".git") else ti)
            if buf.tell() > max_bytes:
                raise ValueError(f"{root}: archive exceeds {max_bytes} bytes (bake large files into the task image)")
    return buf.getvalue()


def untar_into(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(dest, filter="data")


class ControlServer:
    """``start()`` binds; ``url`` is the bind address; ``register``/``unregister`` slots."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, public_url: str | None = None,
                 max_body: int = 64 << 20) -> None:
        self.host, self.port, self.public_url = host, port, public_url
        self.max_body = max_body
        self.slots: dict[str, PodSlot] = {}
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    def register(self, key: str, pod_name: str) -> PodSlot:
        slot = PodSlot(key=key, pod_name=pod_name)
        self.slots[key] = slot
        return slot

    def unregister(self, key: str) -> None:
        slot = self.slots.pop(key, None)
        if slot is not None and not slot.assignment.done():
            slot.assignment.cancel()

    def _slot_fast(self, request: web.Request) -> PodSlot:
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        slot = self.slots.get(key)
        if slot is None:
            raise web.HTTPUnauthorized(text="unknown pod key (Authorization: Bearer <pod key>)")
        return slot

    async def _assignment(self, request: web.Request) -> web.StreamResponse:
        slot = self._slot_fast(request)
        try:
            wait = min(max(float(request.query.get("wait", "25")), 0.0), 120.0)
        except ValueError:
            raise web.HTTPBadRequest(text="wait must be a number of seconds") from None
        slot.polled.set()
        try:
            assignment = await asyncio.wait_for(asyncio.shield(slot.assignment), wait)
        except TimeoutError:
            return web.Response(status=204)
        except asyncio.CancelledError:
            if slot.assignment.cancelled():
                raise web.HTTPGone(text="pod released") from None
            raise
        if slot.fetched_at is None:
            slot.fetched_at = time.monotonic()
        return web.json_response(assignment.as_json())

    async def _agent_done(self, request: web.Request) -> web.StreamResponse:
        slot = self._slot_fast(request)
        if slot.tests is None:
            raise web.HTTPConflict(text="no rollout assigned to this pod")
        if slot.agent_done_at is None:
            slot.agent_done_at = time.monotonic()
        data = await slot.tests()
        return web.Response(body=data, content_type="application/x-tar")

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        slot = self._slot_fast(request)
        if slot.logs_dir is None:
            raise web.HTTPConflict(text="no rollout assigned to this pod")
        data = await request.read()
        try:
            await asyncio.to_thread(untar_into, data, slot.logs_dir)
        except (tarfile.TarError, OSError) as exc:
            raise web.HTTPBadRequest(text=f"logs archive: {exc}") from None
        return web.Response(status=204)

    async def _health(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"ok": True, "pods": len(self.slots)})

    async def start(self) -> None:
        app = web.Application(client_max_size=self.max_body)
        app.router.add_get("/v1/assignment", self._assignment)
        app.router.add_post("/v1/agent-done", self._agent_done)
        app.router.add_post("/v1/logs", self._logs)
        app.router.add_get("/healthz", self._health)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock, backlog=2048)
        await site.start()
        log.info("control endpoint on %s", self.url)

    async def aclose(self) -> None:
        for key in list(self.slots):
            self.unregister(key)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
