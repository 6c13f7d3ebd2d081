"""Build a :class:`training.engines.base.ChatEngine` from a spec string.

``http(s)://…`` → :class:`training.engines.openai_compat.OpenAICompatEngine`;
``local`` or ``local:/path/to/hf/model`` → ``training.engines.local.LocalEngine`` (imported
only when asked for: it pulls in torch and transformers).
"""

from __future__ import annotations

from typing import Any

from training.engines.base import ChatEngine


def make_chat_engine(spec: str, **kw: Any) -> ChatEngine:
    """The engine ``spec`` names; keyword arguments go to its constructor."""
    spec = spec.strip()
    if spec.startswith(("http://", "https://")):
        from training.engines.openai_compat import OpenAICompatEngine

        return OpenAICompatEngine(spec, **kw)
    if spec == "local" or spec.startswith("local:"):
        from training.engines.local import LocalEngine

        path = spec.partition(":")[2] or None
        if path is not None:
            kw.setdefault("model_path", path)
        return LocalEngine(**kw)
    raise ValueError(f"engine spec {spec!r}: expected an http(s):// URL, 'local' or 'local:/path/to/model'")
