"""HTTP clients of the processes in a sandbox (runner, harnesses): TLS only where a URL needs it.

Every ``httpx.AsyncClient`` built with the default ``verify=True`` loads the CA bundle when it
is created: 60-120 ms of CPU, even when every request goes to ``http://127.0.0.1`` (the proxy's
relay, the task's mock services). A rollout made five such clients (services health, agent-done,
finish, the react harness's model and tool clients): about 0.5 s of CPU per rollout, in the
critical path of a GRPO step where the rollouts of a step start at once on a small box.

:func:`async_client` makes a client for one URL's scheme: certificate verification as httpx
does it for ``https`` (and anything not plainly ``http``), no TLS context for ``http`` (no TLS
happens there, so there is nothing to verify). :class:`ClientsByScheme` keeps one client per
kind, made on first use, for callers whose URLs vary.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx


def needs_tls(url: str) -> bool:
    """Whether requests to ``url`` may be TLS: anything but a plain ``http`` URL."""
    return urlsplit(url).scheme.lower() != "http"


def async_client(url: str, **kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for requests to ``url`` (and other URLs of its scheme): httpx's
    verified default for TLS URLs, no TLS context (``verify=False``) for plain ``http``."""
    return httpx.AsyncClient(verify=needs_tls(url), **kwargs)


class ClientsByScheme:
    """One ``httpx.AsyncClient`` per kind of URL (TLS or plain), each made on first use."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._clients: dict[bool, httpx.AsyncClient] = {}

    def for_url(self, url: str) -> httpx.AsyncClient:
        tls = needs_tls(url)
        if tls not in self._clients:
            self._clients[tls] = httpx.AsyncClient(verify=tls, **self._kwargs)
        return self._clients[tls]

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
