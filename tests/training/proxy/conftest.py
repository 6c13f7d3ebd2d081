"""Fixtures for proxy tests: a fake vLLM engine on loopback and the proxy served in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from testkit.fakes.vllm import FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.client import ProxyAdminClient, Registration
from training.proxy.server import ProxyServer


@pytest.fixture
def fake_vllm() -> Iterator[FakeVLLM]:
    with FakeVLLM() as fake:
        yield fake


@pytest.fixture
def proxy(fake_vllm: FakeVLLM, sqlite_url: str) -> Iterator[ProxyServer]:
    engine = OpenAICompatEngine(fake_vllm.base_url, timeout=5.0)
    with ProxyServer(engine, db_url=sqlite_url, max_calls_per_rollout=20) as server:
        yield server


@pytest.fixture
async def admin(proxy: ProxyServer) -> AsyncIterator[ProxyAdminClient]:
    async with proxy.client() as client:
        yield client


@pytest.fixture
async def rollout(admin: ProxyAdminClient) -> Registration:
    return await admin.register(task_id="task-1", group_id="g1", run_id="r1", role="train", harness="test")
