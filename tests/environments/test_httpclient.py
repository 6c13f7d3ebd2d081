"""Sandbox HTTP clients load TLS trust only for URLs that may need it."""

from __future__ import annotations

import ssl

import httpx
import pytest

from environments.httpclient import ClientsByScheme, async_client, needs_tls


def _ssl_context(client: httpx.AsyncClient) -> ssl.SSLContext:
    return client._transport._pool._ssl_context  # type: ignore[attr-defined] - no public accessor


def test_only_plain_http_skips_tls() -> None:
    assert needs_tls("http://127.0.0.1:8000/rollouts/t/v1") is False
    assert needs_tls("HTTP://localhost") is False
    assert needs_tls("https://api.example.com/v1") is True
    assert needs_tls("ftp://example.com") is True
    assert needs_tls("127.0.0.1:8000") is True  # unparsable as http: keep httpx's verified default


@pytest.mark.asyncio
async def test_https_clients_verify_and_http_clients_load_no_ca_bundle() -> None:
    async with async_client("https://api.example.com/v1") as tls, async_client("http://127.0.0.1:1/v1") as plain:
        assert _ssl_context(tls).verify_mode == ssl.CERT_REQUIRED
        assert _ssl_context(tls).cert_store_stats()["x509_ca"] > 0
        assert _ssl_context(plain).cert_store_stats()["x509_ca"] == 0


@pytest.mark.asyncio
async def test_http_client_talks_to_a_plain_server() -> None:
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    transport = httpx.ASGITransport(app=app)
    async with async_client("http://127.0.0.1:9/x", transport=transport) as client:
        assert (await client.get("http://127.0.0.1:9/x")).text == "ok"


@pytest.mark.asyncio
async def test_clients_by_scheme_makes_one_client_per_kind_on_first_use() -> None:
    clients = ClientsByScheme(timeout=3.0)
    plain = clients.for_url("http://127.0.0.1:1/a")
    assert clients.for_url("http://127.0.0.1:2/b") is plain
    tls = clients.for_url("https://example.com/c")
    assert tls is not plain
    assert _ssl_context(tls).verify_mode == ssl.CERT_REQUIRED
    assert plain.timeout.read == 3.0
    await clients.aclose()
    assert plain.is_closed and tls.is_closed
