"""Fixtures for the claw service tests: an in-process client over the real ASGI app
(fast unit tests) and helpers to call tools and read audit/state."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from starlette.testclient import TestClient

from environments.claw.app import create_app


class Claw:
    """A TestClient over ``create_app(services, fixtures)`` with tool-call helpers."""

    def __init__(self, client: TestClient) -> None:
        self.http = client

    def call(self, tool: str, args: Any = None, *, expect: int | None = 200) -> dict[str, Any]:
        service, _, action = tool.partition("_")
        resp = self.http.post(f"/{service}/{action}", json={} if args is None else args)
        body = resp.json()
        if expect is not None:
            assert resp.status_code == expect, body
        return body

    def ok(self, tool: str, args: Any = None) -> Any:
        return self.call(tool, args)["result"]

    def err(self, tool: str, args: Any = None, status: int = 422) -> dict[str, Any]:
        return self.call(tool, args, expect=status)["error"]

    def state(self, service: str) -> dict[str, Any]:
        return self.http.get(f"/{service}/state").json()["state"]

    def audit(self, service: str) -> list[dict[str, Any]]:
        return self.http.get(f"/{service}/audit").json()["events"]

    def changes(self, service: str) -> list[dict[str, Any]]:
        return [e for e in self.audit(service) if e["kind"] == "change"]


@pytest.fixture
def make_claw() -> Callable[..., Claw]:
    clients: list[TestClient] = []

    def factory(services: str, fixtures: Any = None) -> Claw:
        client = TestClient(create_app(services, fixtures))
        clients.append(client)
        return Claw(client)

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def fixtures_dir(tmp_path) -> Callable[[dict[str, dict]], str]:  # noqa: ANN001
    """Factory: write ``<service>.json`` files into a fresh dir and return its path."""
    import json

    def write(data: dict[str, dict]) -> str:
        d = tmp_path / "fixtures"
        d.mkdir(exist_ok=True)
        for name, content in data.items():
            (d / f"{name}.json").write_text(json.dumps(content))
        return str(d)

    return write
