"""The engine protocol the proxy talks to.

An engine takes an OpenAI Chat Completions request body (a plain dict, as a client would
send it, plus vLLM's ``return_token_ids``/``logprobs`` extras the proxy adds) and returns
a Chat Completions response dict in vLLM's wire format:

- ``prompt_token_ids`` at the top level: a sequence of ints (a list; an ``array('q')`` from
  the HTTP adapter, ``openai_compat``, whose parse makes no list of ~60k Python ints),
- ``choices[i].token_ids`` (list[int]) — the response token ids,
- ``choices[i].logprobs.content[j].logprob`` — one entry per response token,
- ``choices[i].message`` with ``content`` and optionally ``tool_calls``,
- ``choices[i].finish_reason``, ``usage``, ``model``.

Engines raise :class:`EngineError` for upstream failures (5xx, timeouts, connection
errors): the proxy records them and marks the rollout as an infra error (DESIGN §5).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class EngineError(RuntimeError):
    """The engine failed for reasons unrelated to the model's output (infra error)."""

    def __init__(self, message: str, *, status_code: int = 502, kind: str = "engine_error") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.kind = kind


class EngineRequestError(ValueError):
    """The engine rejected the request itself (4xx: bad parameter, context too long)."""

    def __init__(self, message: str, *, status_code: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.param = param


@runtime_checkable
class ChatEngine(Protocol):
    """What the proxy needs of a policy engine."""

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """One non-streamed chat completion in vLLM's wire format (see module doc)."""
        ...

    async def list_models(self) -> list[str]:
        """Model ids this engine serves."""
        ...

    @property
    def policy_version(self) -> int | None:
        """Version of the weights now being served (bumped on each weight update)."""
        ...

    async def aclose(self) -> None:
        ...


class EngineWrapper:
    """A ChatEngine around another one: ``chat_completions`` and ``list_models`` are passed
    on, everything else is read from the wrapped engine, and ``aclose`` does nothing (the
    wrapped engine belongs to whoever made it). Subclasses add something around the calls
    (their timing, a gate)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    @property
    def policy_version(self) -> Any:
        return self._engine.policy_version

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._engine.chat_completions(body)

    async def list_models(self) -> list[str]:
        return await self._engine.list_models()

    async def aclose(self) -> None:
        return None
