"""Fixtures for orchestrator tests: the tiny hello task (``testkit.tasks``), a proxy-calling
harness body, the loopback registry and Docker checks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.tasks import make_task

#: A harness body (python -c) making one chat call through the proxy with the rollout token.
PROXY_CALL = (
    "import json, os, urllib.request\n"
    "req = urllib.request.Request(os.environ['OPENFORGE_BASE_URL'] + '/chat/completions',\n"
    "    data=json.dumps({'model': 'policy', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode(),\n"
    "    headers={'content-type': 'application/json',\n"
    "             'authorization': 'Bearer ' + os.environ['OPENFORGE_ROLLOUT_TOKEN']})\n"
    "print(urllib.request.urlopen(req, timeout=30).read()[:200])\n"
)
#: The loopback docker-registry the registry/push tests use (scripts/start-registry.sh).
REGISTRY = os.environ.get("OPENFORGE_REGISTRY", "127.0.0.1:5000")


def skip_because(what: str, reason: str) -> None:
    """Skip, printing why (a skipped component must say so in CI's output)."""
    print(f"{what} skipped: {reason}")
    pytest.skip(reason)


def registry_reason() -> str | None:
    """None when the registry at :data:`REGISTRY` answers its v2 API, else why not."""
    try:
        resp = httpx.get(f"http://{REGISTRY}/v2/", timeout=2)
    except httpx.HTTPError as exc:
        return f"no registry at {REGISTRY}: {exc} (start one with scripts/start-registry.sh)"
    return None if resp.status_code == 200 else f"registry at {REGISTRY} answered HTTP {resp.status_code}"


def docker_client_with_base_image(what: str, timeout: float) -> Iterator[Any]:
    """A Docker SDK client (closed afterwards) when the engine and the base image are there
    (``docker_unavailable_reason``), else skip ``what`` saying why."""
    import docker

    from training.orchestrator.docker_backend import docker_unavailable_reason

    reason = docker_unavailable_reason()
    if reason:
        skip_because(what, reason)
    client = docker.from_env(timeout=timeout)
    yield client
    client.close()


@pytest.fixture
def tiny_task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "bank")
