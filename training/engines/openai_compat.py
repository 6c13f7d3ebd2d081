"""Engine adapter for any OpenAI-compatible chat endpoint (vLLM first).

Asks for vLLM's ``return_token_ids: true`` and ``logprobs: true`` on every call, always
non-streamed, over one pooled HTTP client per event loop. The answer's ``prompt_token_ids``
come as an ``array('q')`` (``answer_parse``: the proxy's form of them, parsed without a list
of Python ints). Upstream failures
(5xx, timeouts, connection errors, unreadable answers) raise :class:`EngineError`; 4xx
answers raise :class:`EngineRequestError` with the engine's message. Engines that do not
return token ids (a plain OpenAI-compatible server) still work: the ids are then absent and
the proxy records none rather than re-tokenizing.

The pool is an ``aiohttp.ClientSession`` rather than ``httpx.AsyncClient``: on the 2-core
machines this project runs on, httpx cost 2.7–5.5 ms of CPU per upstream call against
0.4–0.7 ms for aiohttp (bench/proxy.py), and the proxy's whole budget is under 1 ms.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

from training.engines.answer_parse import loads_chat_answer
from training.engines.base import EngineError, EngineRequestError

log = logging.getLogger(__name__)


class OpenAICompatEngine:
    """:class:`training.engines.base.ChatEngine` over an OpenAI-compatible base URL.

    ``base_url`` is the OpenAI base URL (``http://host:8000/v1``; ``/v1`` is appended when
    missing). ``model`` is the served model name sent upstream; when ``None`` the engine asks
    ``/models`` once and uses a requested name it serves, else its first model.
    """

    def __init__(self, base_url: str, api_key: str | None = None, model: str | None = None, timeout: float = 600.0,
                 *, max_connections: int = 1024, policy_version: int | None = None) -> None:
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else f"{base}/v1"
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.max_connections = max_connections
        self._policy_version = policy_version
        self._served: list[str] | None = None
        self._clients: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}

    @property
    def policy_version(self) -> int | None:
        return self._policy_version

    @policy_version.setter
    def policy_version(self, value: int | None) -> None:
        self._policy_version = value

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._clients.get(loop)
        if session is None or session.closed:
            headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=self.max_connections,
                                             keepalive_timeout=60)
            timeout = aiohttp.ClientTimeout(total=self.timeout, connect=min(self.timeout, 10.0))
            session = aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout,
                                            skip_auto_headers=("User-Agent",))
            self._clients = {lp: c for lp, c in self._clients.items() if not lp.is_closed()}
            self._clients[loop] = session
        return session

    async def _send(self, method: str, path: str, body: dict[str, Any] | None = None,
                    loads: Callable[[bytes], Any] = orjson.loads) -> Any:
        url = self.base_url + path
        data = None if body is None else orjson.dumps(body)
        headers = None if body is None else {"content-type": "application/json"}
        try:
            async with self._session().request(method, url, data=data, headers=headers) as resp:
                status, content = resp.status, await resp.read()
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise EngineError(f"engine at {self.base_url} timed out after {self.timeout:.0f}s ({type(exc).__name__})",
                              status_code=504) from exc
        except aiohttp.ClientError as exc:
            raise EngineError(f"engine at {self.base_url} unreachable: {type(exc).__name__}: {exc}") from exc
        text = content[:2000].decode("utf-8", "replace")
        if status >= 500:
            raise EngineError(f"engine at {self.base_url} answered {status}: {text[:500]}",
                              status_code=status if status in (502, 503, 504) else 502)
        if status >= 400:
            message, param = text, None
            try:
                err = orjson.loads(content).get("error")
                if isinstance(err, dict):
                    message, param = str(err.get("message", message)), err.get("param")
                elif isinstance(err, str):
                    message = err
            except (orjson.JSONDecodeError, AttributeError):
                pass
            raise EngineRequestError(message, status_code=status, param=param)
        try:
            return loads(content)
        except orjson.JSONDecodeError as exc:
            raise EngineError(f"engine at {self.base_url} sent a non-JSON answer: {text[:200]!r}") from exc

    async def list_models(self) -> list[str]:
        out = await self._send("GET", "/models")
        try:
            return [str(m["id"]) for m in out.get("data", [])]
        except (AttributeError, KeyError, TypeError) as exc:
            raise EngineError(f"engine at {self.base_url} sent a malformed model list") from exc

    async def _model_for(self, requested: str | None) -> str | None:
        if self.model:
            return self.model
        if self._served is None:
            self._served = await self.list_models()
        if requested in self._served:
            return requested
        return self._served[0] if self._served else requested

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        request = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        request["model"] = await self._model_for(body.get("model"))
        request["return_token_ids"] = True
        request["logprobs"] = True
        out = await self._send("POST", "/chat/completions", request, loads=loads_chat_answer)
        if not isinstance(out, dict) or not out.get("choices"):
            raise EngineError(f"engine at {self.base_url} answered without choices")
        return out

    async def release_loop(self) -> None:
        """Close the pool of the running event loop only (a server on that loop is stopping)."""
        session = self._clients.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        current = asyncio.get_running_loop()
        for loop, session in clients.items():
            if loop is current:
                await session.close()
            elif not loop.is_closed() and loop.is_running():
                asyncio.run_coroutine_threadsafe(session.close(), loop)
