"""Fixtures of the red-team suite: a proxy on a fake engine, the canaries, the backends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.redteam import Context, attack_context


@pytest.fixture
def redteam_ctx(openforge_home: Path) -> Iterator[Context]:
    with attack_context(openforge_home) as ctx:
        yield ctx


@pytest.fixture
async def redteam_proxy(sqlite_url: str) -> AsyncIterator[Any]:
    from testkit.fakes.vllm import FakeVLLM
    from training.engines.openai_compat import OpenAICompatEngine
    from training.proxy.server import ProxyServer

    with FakeVLLM() as fake:
        engine = OpenAICompatEngine(fake.base_url, model=fake.model)
        async with ProxyServer(engine, db_url=sqlite_url) as proxy:
            client = proxy.client()
            try:
                yield client
            finally:
                await client.aclose()


# The fake cluster of the kubernetes tests (its kubelet runs pods through bubblewrap).
from tests.training.orchestrator.kubernetes.conftest import cluster, k8s_backend  # noqa: F401
