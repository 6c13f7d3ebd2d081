"""The in-process local engine: a transformers model behind the ChatEngine protocol
(prompt rendering, sampling, continuous batching, in-place weight updates)."""

from training.engines.local.engine import LocalEngine

__all__ = ["LocalEngine"]
