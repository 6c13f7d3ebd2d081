"""HTTP requests of the processes in a sandbox (the runner, the react harness): the standard
library's ``urllib`` on a worker thread.

Why not httpx here: in an asyncio process its first request costs ~50 ms of CPU in imports
(httpx, httpcore with h11/h2, anyio's asyncio backend for httpcore's locks), against ~6 ms
for ``http.client``/``urllib``; the runner and the react harness each paid it once per
rollout (about 0.1 s of CPU per rollout on a 2-core box where a GRPO step starts its rollouts
at once), for a handful of small requests to loopback (the proxy's relay, the task's mock
services). What the httpx clients did, this does the same way: no redirect is followed (a
3xx is the answer); proxies come from the environment (httpx's ``trust_env``); ``https``
URLs are verified against certifi's bundle (httpx's default; ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` win, as there) and plain ``http`` never builds a TLS context; the timeout
holds for each blocking operation (connect, each read); any HTTP status is a
:class:`Response`, and no answer at all (refused, reset, timed out, bad URL) is a
:class:`TransportError`.
"""

from __future__ import annotations

import asyncio
import http.client
import json as jsonlib
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import urlsplit


class TransportError(Exception):
    """No HTTP answer: the connection was refused, reset or timed out, or the URL is unusable."""


@dataclass(frozen=True)
class Response:
    """One HTTP answer, whatever its status."""

    status_code: int
    content: bytes = b""
    #: Header names lower-cased.
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON (``ValueError`` when it is not)."""
        return jsonlib.loads(self.content)


def needs_tls(url: str) -> bool:
    """Whether requests to ``url`` may be TLS: anything but a plain ``http`` URL."""
    return urlsplit(url).scheme.lower() != "http"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx is returned as it is (httpx's default), never followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201, PLR0913
        return None


def https_context() -> ssl.SSLContext:
    """The verifying context httpx would use: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, else
    certifi's bundle (the system's when certifi is missing)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    try:
        import certifi  # noqa: PLC0415 - only for https URLs
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


@cache
def _opener(tls: bool) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [_NoRedirects()]
    if tls:
        handlers.append(urllib.request.HTTPSHandler(context=https_context()))
    return urllib.request.build_opener(*handlers)


def request_sync(method: str, url: str, *, json: Any = None, params: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None, timeout: float = 30.0) -> Response:
    """``method url`` (with ``json`` as the body, ``params`` as the query), blocking."""
    if params:
        url += ("&" if urlsplit(url).query else "?") + urllib.parse.urlencode(params, doseq=True)
    data = None
    all_headers = dict(headers or {})
    if json is not None:
        data = jsonlib.dumps(json).encode()
        all_headers.setdefault("Content-Type", "application/json")
    try:
        req = urllib.request.Request(url, data=data, headers=all_headers, method=method.upper())
        with _opener(needs_tls(url)).open(req, timeout=timeout) as resp:
            return Response(resp.status, resp.read(), {k.lower(): v for k, v in resp.headers.items()})
    except urllib.error.HTTPError as exc:  # any status >= 300: an answer, not a failure
        try:
            body = exc.read()
        except (OSError, http.client.HTTPException):
            body = b""
        finally:
            exc.close()
        return Response(exc.code, body, {k.lower(): v for k, v in (exc.headers or {}).items()})
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise TransportError(f"{type(reason).__name__}: {reason}") from exc


async def request(method: str, url: str, *, json: Any = None, params: dict[str, Any] | None = None,
                  headers: dict[str, str] | None = None, timeout: float = 30.0) -> Response:
    """:func:`request_sync` on a worker thread (the event loop keeps running)."""
    return await asyncio.to_thread(request_sync, method, url, json=json, params=params, headers=headers,
                                   timeout=timeout)
