"""Host side of the proxy relay: a unix socket that forwards to the proxy's TCP port.

Sandboxes have a loopback-only network (bubblewrap ``--unshare-net``, docker
``network_mode=none``). The host listens on ``<relay dir>/<port>.sock``; the dir is bound
into the sandbox at ``/run/openforge``, where ``sandbox_init.py`` listens on the proxy's
loopback port and forwards each connection to that socket. The sandbox so reaches the
proxy and nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from training.orchestrator.sandbox_init import pipe  # stdlib only: the in-sandbox half of the relay

log = logging.getLogger(__name__)

#: Where the relay dir is bound inside a sandbox.
SANDBOX_RELAY_DIR = "/run/openforge"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def loopback_target(base_url: str | None) -> tuple[str, int] | None:
    """(host, port) of a loopback base URL, or None for no URL / a non-loopback one."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.hostname not in LOOPBACK_HOSTS:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (parts.hostname or "127.0.0.1", port)


class HostRelays:
    """One unix-socket relay per proxy port, shared by every sandbox of a backend."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="of-relay-"))
        self.dir.chmod(0o755)  # a sandbox agent that is not us must reach the (0666) sockets
        self._servers: dict[int, asyncio.AbstractServer] = {}
        self._lock = asyncio.Lock()
        self._conns: set[asyncio.Task[None]] = set()

    def socket_name(self, port: int) -> str:
        return f"{port}.sock"

    async def ensure(self, host: str, port: int) -> Path:
        """Start (once) the relay to ``host:port``; returns its socket path."""
        path = self.dir / self.socket_name(port)
        async with self._lock:
            if port not in self._servers:

                async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                    task = asyncio.current_task()
                    if task is not None:
                        self._conns.add(task)
                    try:
                        ur, uw = await asyncio.open_connection(host.strip("[]"), port)
                    except OSError as exc:
                        log.warning("relay: cannot reach %s:%s: %s", host, port, exc)
                        w.close()
                        return
                    try:
                        await asyncio.gather(pipe(r, uw), pipe(ur, w))
                    finally:
                        for x in (w, uw):
                            x.close()
                        if task is not None:
                            self._conns.discard(task)

                self._servers[port] = await asyncio.start_unix_server(handle, path=str(path))
                path.chmod(0o666)
        return path

    async def aclose(self) -> None:
        for server in self._servers.values():
            server.close()
        for task in list(self._conns):
            task.cancel()
        for server in self._servers.values():
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (TimeoutError, Exception) as exc:  # noqa: BLE001 - best effort at shutdown
                log.debug("relay shutdown: %s", exc)
        self._servers.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
