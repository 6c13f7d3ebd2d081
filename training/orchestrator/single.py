"""One rollout from the command line: ``openforge rollout TASK_DIR --harness NAME ...``.

Starts a backend, and — when the harness needs a model and an engine is given — an
in-process proxy in front of that engine; runs the rollout through the scheduler (so the
DB row, the timeout and the cleanup are the same as in training) and returns the JSON
document the CLI prints.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

from environments.records import RolloutSpec
from environments.taskdir import TaskDir, load_task
from openforge.settings import get_settings
from training.orchestrator.factory import make_backend
from training.orchestrator.scheduler import Scheduler, new_rollout_id

log = logging.getLogger(__name__)


def harness_uses_model(name: str) -> bool:
    try:
        from environments.harnesses.registry import get_harness

        return bool(get_harness(name).uses_model)
    except Exception:  # noqa: BLE001 - unknown harness: the runner reports harness_missing
        return False


#: The rollout's wall clock when the task sets no agent limit (Harbor's default: none).
NO_AGENT_LIMIT_WALL_SEC = 24 * 3600.0


def task_wall_clock(task: TaskDir) -> float:
    """Agent + verifier + build budgets of the task (a day when the agent has no limit)."""
    cfg = task.config
    if cfg.agent.timeout_sec is None:
        return NO_AGENT_LIMIT_WALL_SEC
    return cfg.agent.timeout_sec + cfg.verifier.timeout_sec + cfg.environment.build_timeout_sec


async def rollout_once(
    task_dir: str,
    harness: str,
    *,
    backend: str = "local",
    engine: str | None = None,
    timeout: float | None = None,
    model: str = "policy",
    harness_options: dict[str, Any] | None = None,
    db_url: str | None = None,
    record: bool = True,
    budget: Any = None,
) -> dict[str, Any]:
    """Run one rollout; returns ``{status, reward, error_kind, n_calls, seconds, ...}``.

    ``budget`` (a :class:`training.proxy.budget.GenerationBudget`) is registered with the rollout
    at the proxy started here."""
    task = load_task(task_dir)
    spec = RolloutSpec(
        rollout_id=new_rollout_id(), task_dir=str(task.path), task_id=task.id, harness=harness, role="test",
        model=model, timeout_sec=timeout or task_wall_clock(task),
        harness_options=harness_options or {},
    )
    db = None
    url = db_url or get_settings().db_url
    if record:
        from storage.db import make_engine
        from storage.migrate import upgrade

        db = make_engine(url)
        upgrade(url, db)
    async with AsyncExitStack() as stack:
        sandbox = make_backend(backend)
        stack.push_async_callback(sandbox.aclose)
        proxy_client = None
        if engine and harness_uses_model(harness):
            from training.engines.factory import make_chat_engine
            from training.proxy.server import ProxyServer

            chat_engine = make_chat_engine(engine)
            stack.push_async_callback(chat_engine.aclose)
            proxy = await stack.enter_async_context(ProxyServer(chat_engine, db_url=url))
            proxy_client = proxy.client(budget=budget)
            stack.push_async_callback(proxy_client.aclose)
        scheduler = Scheduler(sandbox, proxy=proxy_client, db=db)
        result = await scheduler.run_one(spec)
        notes = scheduler.sandbox_notes.get(result.rollout_id, [])
    if db is not None:
        db.dispose()
    doc = result.model_dump(mode="json")
    doc["sandbox_notes"] = notes
    return doc
