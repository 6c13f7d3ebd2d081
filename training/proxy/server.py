"""Run an ASGI app (the proxy, or a test fake) with uvicorn inside this process.

:class:`BackgroundUvicorn` serves an app on its own event loop in a daemon thread, on a
socket bound before start (``port=0`` picks a free port), so sync and async callers in the
main thread can both talk to it. :class:`ProxyServer` is the proxy served that way.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import threading
from typing import Any, Self

import uvicorn

from training.engines.base import ChatEngine

log = logging.getLogger(__name__)

#: Seconds an idle keep-alive connection stays open. Above every client's own idle expiry
#: (httpx and the OpenAI/Anthropic SDKs: 5 s; Node's agents: 4-5 s), so a client never sends
#: on a pooled connection the proxy is closing at that instant — with uvicorn's default (5 s,
#: equal to httpx's) that race ended a loaded evaluation's rollout as "proxy registration
#: failed: ReadError".
KEEP_ALIVE_S = 75


def advertised_address(host: str) -> str:
    """The address others reach a server bound to ``host`` at: ``host`` itself, except for the
    wildcard, where it is this machine's own address (in a Kubernetes pod, the pod IP)."""
    if host not in ("0.0.0.0", "", "::"):
        return host
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def parse_ports(text: str | None) -> range | None:
    """``"9000-9015"`` → range(9000, 9016); ``None`` → None. Raises ValueError naming the text."""
    if not text:
        return None
    low, sep, high = text.partition("-")
    try:
        first, last = int(low), int(high if sep else low)
    except ValueError:
        raise ValueError(f"OPENFORGE_PROXY_PORTS={text!r}: expected LOW-HIGH, e.g. 9000-9015") from None
    if not 0 < first <= last < 65536:
        raise ValueError(f"OPENFORGE_PROXY_PORTS={text!r}: expected 0 < LOW <= HIGH < 65536")
    return range(first, last + 1)


def bind_socket(host: str, port: int, ports: range | None = None) -> socket.socket:
    """A TCP socket bound to ``host``:``port``; with port 0 and ``ports``, to the first free
    port of the range (OSError when all are taken)."""
    candidates = ports if (port == 0 and ports) else [port]
    error: OSError | None = None
    for candidate in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise OSError(f"no free port for the proxy on {host} in {candidates[0]}-{candidates[-1]}: {error}")


class BackgroundUvicorn:
    """An ASGI app served by uvicorn in a background thread; ``start()``/``stop()``."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning", *,
                 ports: range | None = None, advertise_host: str | None = None) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.ports = ports  # with port 0: bind the first free port of this range
        self.advertise_host = advertise_host or advertised_address(host)
        self.log_level = log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Where clients reach the server: the advertised address (sandboxes on other machines
        are handed URLs under it by the proxy's admin API)."""
        return f"http://{self.advertise_host}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        if self._thread is not None:
            return
        sock = bind_socket(self.host, self.port, self.ports)
        self.port = sock.getsockname()[1]
        # log_config=None: uvicorn's dictConfig would replace the process's logging handlers
        # (Prefect's among them, flushed under logging's lock) from this thread — a deadlock
        # when a Prefect task starts on another thread at that moment (two pipeline stages at once)
        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level=self.log_level, log_config=None,
                                lifespan="on", access_log=False, timeout_graceful_shutdown=5,
                                timeout_keep_alive=KEEP_ALIVE_S)
        self._server = uvicorn.Server(config)

        def run() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            except BaseException as exc:  # noqa: BLE001 - reported to start()'s caller
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = threading.Event()
        waited = 0.0
        while not self._server.started:
            if not self._thread.is_alive():
                self._thread = None
                raise RuntimeError(f"server on {self.url} failed to start: {self._error!r}")
            if waited > timeout:
                self.stop()
                raise TimeoutError(f"server on {self.url} did not start within {timeout:.0f}s")
            deadline.wait(0.01)
            waited += 0.01

    def stop(self, timeout: float = 15.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("server on %s did not stop within %.0fs", self.url, timeout)
        self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)


class ProxyServer(BackgroundUvicorn):
    """The recording proxy for ``engine``, served in-process; ``.url`` and ``.admin_key``.

    Extra keyword arguments go to :func:`training.proxy.app.create_app`. The engine stays the
    caller's to close.
    """

    def __init__(self, engine: ChatEngine, host: str = "127.0.0.1", port: int = 0, db_url: str | None = None,
                 admin_key: str | None = None, *, ports: range | None = None, advertise_host: str | None = None,
                 **app_options: Any) -> None:
        from training.proxy.app import create_app

        app = create_app(engine, db_url=db_url, admin_key=admin_key, **app_options)
        super().__init__(app, host=host, port=port, ports=ports, advertise_host=advertise_host)
        self.engine = engine
        self.admin_key: str = app.state.admin_key

    def client(self, budget: Any = None) -> Any:
        """A :class:`training.proxy.client.ProxyAdminClient` for this server (``budget``: its
        :class:`training.proxy.budget.GenerationBudget` for every registration)."""
        from training.proxy.client import ProxyAdminClient

        return ProxyAdminClient(self.url, self.admin_key, budget=budget)



def serve_foreground(app: Any, host: str = "127.0.0.1", port: int = 0,
                     on_ready: Any = None, log_level: str = "warning") -> None:
    """Serve ``app`` in this thread until interrupted; ``on_ready(url)`` once the socket is bound.

    uvicorn picks uvloop/httptools when installed (the CLI's fast path).
    """
    sock = bind_socket(host, port)
    sock.listen(2048)  # connections made as soon as on_ready fires wait in the backlog, not refused
    url = f"http://{host}:{sock.getsockname()[1]}"
    config = uvicorn.Config(app, host=host, port=sock.getsockname()[1], log_level=log_level, lifespan="on",
                            access_log=False, timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE_S)
    server = uvicorn.Server(config)
    # A process that only serves: what exists now (modules, the app) lives as long as it does,
    # so the collector's full passes need not walk it again and again (~120k objects after
    # the imports; each full pass cost tens of ms under 64 concurrent 60k-token rollouts).
    gc.freeze()
    if on_ready is not None:
        on_ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
