"""Training workflows as plain async functions: distill, SFT, RL (GRPO) and evaluation.

Each composes the room's parts — an engine, the proxy, a sandbox backend and the
scheduler (:class:`~training.workflows.service.RolloutService`), trajectory
reconstruction and the local trainer — and returns a pydantic report. Prefect flows and
the CLI call these; nothing here knows about Prefect.
"""
