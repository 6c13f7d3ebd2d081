"""Where a run's proxy listens and what address it hands sandboxes: loopback by default; on
a Kubernetes flow pod, every interface on a port of the range the NetworkPolicy opens, with
rollout URLs under the pod's own address (sandboxes in other pods cannot reach 127.0.0.1)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx
import pytest

from testkit.fakes.vllm import FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.server import ProxyServer, advertised_address, bind_socket, parse_ports


def test_a_port_range_binds_its_first_free_port() -> None:
    taken = bind_socket("127.0.0.1", 0)
    first = taken.getsockname()[1]
    taken.listen()
    try:
        sock = bind_socket("127.0.0.1", 0, range(first, first + 3))
        assert sock.getsockname()[1] in (first + 1, first + 2)  # first is taken: the next free one
        sock.close()
        with pytest.raises(OSError, match="no free port"):
            bind_socket("127.0.0.1", 0, range(first, first + 1))
    finally:
        taken.close()


@pytest.mark.parametrize("text", ["9000-", "nine", "9010-9000", "0-10"])
def test_a_bad_port_range_is_one_error_naming_the_setting(text: str) -> None:
    with pytest.raises(ValueError, match="OPENFORGE_PROXY_PORTS"):
        parse_ports(text)


def test_parse_ports() -> None:
    assert parse_ports(None) is None and parse_ports("9000-9015") == range(9000, 9016) and parse_ports("9000") == range(9000, 9001)


async def test_bound_to_every_interface_it_hands_out_urls_under_its_own_address(sqlite_url: str) -> None:
    own = advertised_address("0.0.0.0")
    assert own == socket.gethostbyname(socket.gethostname())
    with FakeVLLM() as fake, ProxyServer(OpenAICompatEngine(fake.base_url, timeout=5.0), db_url=sqlite_url,
                                         host="0.0.0.0") as proxy:
        assert proxy.url == f"http://{own}:{proxy.port}"
        async with proxy.client() as admin:
            reg = await admin.register(task_id="t", group_id="g", run_id="r", role="train", harness="test")
        assert urlsplit(reg.base_url).hostname == own, "a sandbox elsewhere is handed the proxy's own address"
        async with httpx.AsyncClient() as client:  # reachable at that address, with the rollout's token
            resp = await client.get(f"{reg.base_url}/models", headers={"authorization": f"Bearer {reg.token}"})
        assert resp.status_code == 200
