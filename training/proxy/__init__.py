"""The recording proxy (DESIGN §5, §10): harnesses speak their native model API (OpenAI chat,
OpenAI Responses, Anthropic Messages) to a per-rollout base URL; the proxy forwards every
call to a :class:`training.engines.base.ChatEngine` and records it as a training sample.

Modules: ``app`` (assembles the app), ``routes/`` (the routes, one module a concern),
``fast_path`` (model routes before the framework's stack), ``server`` (in-process uvicorn),
``client`` (admin client), ``recorder`` (rollout registry + batched DB writes), ``translate_*``
(pure API translation), ``wire`` (JSON and SSE framing), ``errors`` (errors in the caller's
API format).
"""
