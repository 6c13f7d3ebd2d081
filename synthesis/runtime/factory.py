"""Pick an agent runtime by backend name (``claude``, ``openai``; ``procedural`` needs none)."""

from __future__ import annotations

import os

from synthesis.runtime.base import AgentRuntime, CallGate


def make_runtime(
    backend: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    env: dict[str, str] | None = None,
    gate: CallGate | None = None,
) -> AgentRuntime | None:
    """The runtime of ``backend``; None for ``procedural``. Raises ValueError for unknown names.

    ``gate`` is entered around each of the runtime's paid API calls (see :data:`CallGate`)."""
    if backend == "procedural":
        return None
    if backend == "claude":
        from synthesis.runtime.claude import DEFAULT_MODEL, ClaudeAgent  # noqa: PLC0415

        return ClaudeAgent(model=model or DEFAULT_MODEL, env=env, gate=gate)
    if backend == "openai":
        from synthesis.runtime.openai_loop import OpenAIAgent  # noqa: PLC0415

        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise ValueError("openai backend: pass --base-url or set OPENAI_BASE_URL")
        return OpenAIAgent(base_url=url, model=model or os.environ.get("OPENFORGE_SYNTH_MODEL", "default"),
                           api_key=api_key or os.environ.get("OPENAI_API_KEY", "none"), gate=gate)
    raise ValueError(f"unknown synthesis backend {backend!r} (known: procedural, claude, openai)")
