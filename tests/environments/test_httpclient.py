"""The sandbox processes' HTTP requests (stdlib, on a worker thread): answers of any status
come back as they are, redirects are not followed, no answer is a TransportError, and TLS
trust is loaded only for URLs that may need it."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from environments import httpclient
from environments.httpclient import TransportError, https_context, needs_tls, request


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/redirect"):
            self._answer(302, b"moved", {"Location": "/echo"})
        elif self.path.startswith("/slow"):
            time.sleep(1.0)
            self._answer(200, b"late")
        elif self.path.startswith("/missing"):
            self._answer(404, b'{"error": "nope"}', {"Retry-After": "3"})
        else:
            self._answer(200, json.dumps({"path": self.path, "auth": self.headers.get("Authorization")}).encode())

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/redirect"):
            self._answer(307, b"", {"Location": "/echo"})
            return
        self._answer(503 if self.path.startswith("/busy") else 200,
                     json.dumps({"got": json.loads(body), "type": self.headers.get("Content-Type")}).encode())


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_only_plain_http_skips_tls() -> None:
    assert needs_tls("http://127.0.0.1:8000/rollouts/t/v1") is False
    assert needs_tls("HTTP://localhost") is False
    assert needs_tls("https://api.example.com/v1") is True
    assert needs_tls("ftp://example.com") is True
    assert needs_tls("127.0.0.1:8000") is True  # unparsable as http: the verified kind


async def test_json_post_and_get_with_params_and_headers(server: str) -> None:
    resp = await request("POST", f"{server}/echo", json={"a": [1, 2]}, headers={"Authorization": "Bearer t"})
    assert resp.is_success and resp.json() == {"got": {"a": [1, 2]}, "type": "application/json"}
    resp = await request("GET", f"{server}/q", params={"query": "Ada L", "n": 2}, headers={"Authorization": "Bearer t"})
    assert resp.json() == {"path": "/q?query=Ada+L&n=2", "auth": "Bearer t"}


async def test_error_statuses_are_answers_with_their_body_and_headers(server: str) -> None:
    resp = await request("GET", f"{server}/missing")
    assert (resp.status_code, resp.is_success, resp.json()) == (404, False, {"error": "nope"})
    assert resp.headers["retry-after"] == "3"
    busy = await request("POST", f"{server}/busy", json={})
    assert busy.status_code == 503 and busy.json()["got"] == {}


async def test_redirects_are_not_followed(server: str) -> None:
    assert (await request("GET", f"{server}/redirect")).status_code == 302
    assert (await request("POST", f"{server}/redirect", json={})).status_code == 307


async def test_no_answer_is_a_transport_error(server: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(TransportError, match="refused"):
        await request("GET", f"http://127.0.0.1:{port}/x", timeout=2.0)
    with pytest.raises(TransportError, match="timed out"):
        await request("GET", f"{server}/slow", timeout=0.2)
    with pytest.raises(TransportError):
        await request("GET", "nonsense://x", timeout=1.0)


async def test_plain_http_never_builds_a_tls_context(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> ssl.SSLContext:
        raise AssertionError("a TLS context for a plain http URL")

    monkeypatch.setattr(httpclient, "https_context", refuse)
    httpclient._opener.cache_clear()
    try:
        assert (await request("GET", f"{server}/echo")).is_success
    finally:
        httpclient._opener.cache_clear()


def test_https_context_verifies_against_a_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ctx = https_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0
