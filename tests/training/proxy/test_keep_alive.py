"""The proxy keeps an idle connection open longer than its clients keep one in their pools,
so a pooled connection is never closed by the proxy just as a client sends on it."""

from __future__ import annotations

import http.client
import time

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from training.proxy.server import KEEP_ALIVE_S, BackgroundUvicorn

HTTPX_KEEPALIVE_EXPIRY_S = 5.0  # httpx's (and so the OpenAI/Anthropic SDKs') default


def test_an_idle_connection_outlives_a_clients_pool_expiry() -> None:
    assert KEEP_ALIVE_S > HTTPX_KEEPALIVE_EXPIRY_S
    server = BackgroundUvicorn(Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))]))
    server.start()
    try:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"ok"
        first = conn.sock
        time.sleep(HTTPX_KEEPALIVE_EXPIRY_S + 1.0)  # idle past a client's expiry: uvicorn's default (5 s) has closed it
        conn.request("GET", "/")  # RemoteDisconnected if the proxy closed the idle connection
        assert conn.getresponse().read() == b"ok" and conn.sock is first
        conn.close()
    finally:
        server.stop()
