"""Services served from a thread of the runner (environments/service_host.py, through
ServiceGroup): healthy on loopback, stopped at the end, and every way they fail to come up —
an app that cannot be built, a server that dies, one that never answers — is a ServiceError
(the runner's infra_error/service_failed)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from environments.claw.domain import DOMAIN as CLAW
from environments.httpclient import TransportError, request
from environments.service_group import ServiceError, ServiceGroup


def _group(tmp_path: Path, factory: Any, services: list[str] | None = None, timeout: float = 5.0) -> ServiceGroup:
    return ServiceGroup(services or ["contacts"], None, python=sys.executable, env={}, cwd=tmp_path,
                        log_path=tmp_path / "services.log", timeout=timeout, app_factory=factory)


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def _boom(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An app whose ``/boom`` handler raises."""
    if scope["path"] == "/boom":
        raise RuntimeError("boom")
    await _hello(scope, receive, send)


async def test_claw_services_in_the_runner_answer_and_stop(tmp_path: Path) -> None:
    group = _group(tmp_path, CLAW.app_factory)
    url = await group.start()
    try:
        assert url.startswith("http://127.0.0.1:")
        assert (await request("GET", f"{url}/healthz")).json() == {"ok": True, "services": ["contacts"]}
        found = await request("POST", f"{url}/contacts/nosuchaction", json={})
        assert found.status_code == 404
        ready = json.loads((tmp_path / "services-ready.json").read_text())
        assert ready["url"] == url
        assert f"CLAW_READY {url}" in (tmp_path / "services.log").read_text()
    finally:
        await group.stop()
    with pytest.raises(TransportError):
        await request("GET", f"{url}/healthz", timeout=1.0)


async def test_an_app_that_cannot_be_built_is_a_service_error(tmp_path: Path) -> None:
    group = _group(tmp_path, CLAW.app_factory, services=["nosuchservice"])
    with pytest.raises(ServiceError, match="nosuchservice"):
        await group.start()
    await group.stop()


async def test_a_server_that_dies_before_it_is_healthy_is_a_service_error(tmp_path: Path) -> None:
    # uvicorn cannot load this app: its thread ends (SystemExit) before anything listens
    group = _group(tmp_path, lambda services, fixtures: "environments_no_such_module:app")
    start = time.monotonic()
    with pytest.raises(ServiceError, match="stopped"):
        await group.start()
    assert time.monotonic() - start < 4  # reported when the thread ends, not at the timeout
    await group.stop()


async def test_a_handler_that_raises_answers_500_and_the_services_stay_up(tmp_path: Path) -> None:
    group = _group(tmp_path, lambda services, fixtures: _boom)
    url = await group.start()
    try:
        assert (await request("GET", f"{url}/boom")).status_code == 500
        assert (await request("GET", f"{url}/healthz")).status_code == 200
        assert "boom" in (tmp_path / "services.log").read_text()
    finally:
        await group.stop()


async def test_the_services_log_gets_server_errors_when_uvicorn_does_not_propagate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a process whose logging config stops uvicorn's records short of the root (Prefect's does)
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", False)

    group = _group(tmp_path, lambda services, fixtures: _boom)
    url = await group.start()
    try:
        assert (await request("GET", f"{url}/boom")).status_code == 500
    finally:
        await group.stop()
    assert (tmp_path / "services.log").read_text().count("RuntimeError: boom") == 1
    assert all(not isinstance(h, logging.FileHandler) or h.baseFilename != str(tmp_path / "services.log")
               for h in logging.getLogger("uvicorn").handlers + logging.getLogger().handlers)


async def test_an_unhealthy_server_is_a_service_error_within_the_timeout(tmp_path: Path) -> None:
    async def unhealthy(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 503, "headers": []})
        await send({"type": "http.response.body", "body": b"not yet"})

    group = _group(tmp_path, lambda services, fixtures: unhealthy, timeout=1.0)
    start = time.monotonic()
    with pytest.raises(ServiceError, match="not healthy after"):
        await group.start()
    assert time.monotonic() - start < 5
    await group.stop()


async def test_a_hanging_handler_holds_neither_the_runner_nor_the_stop(tmp_path: Path) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] == "/spin":
            end = time.monotonic() + 8
            while time.monotonic() < end:  # a handler stuck in a CPU loop (holds its thread's loop)
                pass
        await _hello(scope, receive, send)

    group = _group(tmp_path, lambda services, fixtures: app)
    url = await group.start()
    spin = asyncio.ensure_future(request("GET", f"{url}/spin", timeout=0.5))
    ticks = 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:  # the runner's own loop keeps running meanwhile
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks > 10
    with pytest.raises(TransportError):
        await spin
    start = time.monotonic()
    await group.stop()
    assert time.monotonic() - start < 6
