"""The recording proxy (DESIGN §5, §10): harnesses speak their native model API (OpenAI chat,
OpenAI Responses, Anthropic Messages) to a per-rollout base URL; the proxy forwards every
call to a :class:`training.engines.base.ChatEngine` and records it as a training sample.

Modules: ``app`` (routes), ``server`` (in-process uvicorn), ``client`` (admin client),
``recorder`` (rollout registry + batched DB writes), ``translate_*`` (pure API translation),
``streams`` (SSE synthesis), ``errors`` (errors in the caller's API format).
"""
