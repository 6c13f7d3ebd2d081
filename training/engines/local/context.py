"""Context extension for the local engine: static YaRN RoPE scaling set on the model config.

The default model (SmolLM2-135M-Instruct) was trained on an 8,192-token window, shorter than
the first prompt of Codex CLI (~9.4k tokens), OpenClaw (~9.8k) or Claude Code (~21.7k).
:func:`extend_context` rewrites a plain-RoPE config to YaRN (transformers' ``rope_type
"yarn"``) with ``factor = target / trained window`` and raises ``max_position_embeddings``
to the target, before the weights are loaded.

Why static YaRN and not dynamic NTK: dynamic scaling recomputes the frequencies from the
longest sequence in each forward pass, so rows batched together, KV-cache entries written
at different lengths, and the trainer's one-pass recompute would each see different
positional encodings — the recorded logprobs would not be the policy's. YaRN's frequencies
are fixed: the engine, its KV cache and the trainer (a copy of the engine's model, config
included) agree at every length. Its cost is that short prompts change a little too (the
low-frequency dimensions are interpolated and attention is sharpened by YaRN's
``0.1 ln(factor) + 1``); ``bench/context.py`` measures it.
"""

from __future__ import annotations

import logging
import math
from typing import Any

log = logging.getLogger(__name__)

#: Context the local engine serves the default model with (tokens).
DEFAULT_CONTEXT_LENGTH = 32768


class ContextExtensionError(ValueError):
    """The model's positional encoding cannot be extended this way."""


def trained_window(config: Any) -> int:
    """The window the model was trained on (before any extension)."""
    rope = getattr(config, "rope_parameters", None) or {}
    original = rope.get("original_max_position_embeddings") if isinstance(rope, dict) else None
    return int(original or config.max_position_embeddings)


def extend_context(config: Any, target: int) -> dict[str, Any] | None:
    """Set YaRN on ``config`` (in place) so it serves ``target`` tokens; the new rope parameters.

    Returns None (and changes nothing) when the config already serves ``target`` tokens. A
    config already extended (e.g. a checkpoint the trainer saved) is left as it is when its
    window suffices. Only plain RoPE (``rope_type "default"``) is extended.
    """
    current = int(config.max_position_embeddings)
    if target <= current:
        return None
    rope = dict(getattr(config, "rope_parameters", None) or {})
    kind = rope.get("rope_type", "default")
    if kind != "default" or "rope_theta" not in rope:
        raise ContextExtensionError(
            f"cannot extend a {kind!r} RoPE config to {target} tokens (only plain RoPE is extended)"
        )
    factor = float(target) / current
    rope.update(rope_type="yarn", factor=factor, original_max_position_embeddings=current)
    config.rope_parameters = rope
    config.max_position_embeddings = int(target)
    log.info("context extended from %d to %d tokens (YaRN, factor %.2f, attention factor %.3f)",
             current, target, factor, yarn_attention_factor(factor))
    return rope


def policy_config(source: str, context_length: int | None = None) -> tuple[Any, dict[str, Any] | None]:
    """``(config, extension)`` of the model at ``source`` as the local engine serves it: the
    default model extended to :data:`DEFAULT_CONTEXT_LENGTH` (or ``context_length``), any other
    model to ``context_length`` when given. The trainer loads with the same config, so a
    checkpoint it saves is served — and trained — with the engine's positional encoding."""
    from transformers import AutoConfig  # noqa: PLC0415 - heavy

    from training.engines.model_store import is_default_model  # noqa: PLC0415

    config = AutoConfig.from_pretrained(source)
    target = context_length or (DEFAULT_CONTEXT_LENGTH if is_default_model(source) else None)
    return config, (extend_context(config, target) if target else None)


def yarn_attention_factor(factor: float) -> float:
    """YaRN's cos/sin scale ``0.1 ln(factor) + 1`` (transformers' default for ``rope_type "yarn"``)."""
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
