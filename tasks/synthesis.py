"""Prefect task: one synthesis run (resumable; every stage records its progress in the DB).

A seeded (or named) run's report is cached by its parameters (:data:`tasks.stage_keys.SYNTHESIS_KEY`),
so a re-run pipeline reuses the tasks it made instead of synthesizing new ones."""

from __future__ import annotations

from prefect import get_run_logger, task

from tasks.cache import note_reuse
from tasks.retry import infra_only
from tasks.stage_keys import SYNTHESIS_KEY

PAID_BACKEND_LIMITS = {"claude": "anthropic-api", "openai": "openai-api"}
#: Hang guard of a whole synthesis run: no preset budgets it (the agents' own budgets are turns
#: and dollars), so a generous ceiling well above a nightly paid run of tens of tasks.
SYNTHESIS_TIMEOUT_S = 12 * 3600


@task(name="synthesize", retries=2, retry_delay_seconds=5, retry_condition_fn=infra_only,
      cache_policy=SYNTHESIS_KEY, result_serializer="json", timeout_seconds=SYNTHESIS_TIMEOUT_S,
      on_completion=[note_reuse])
async def run_synthesis(domain: str, n: int, purpose: str, backend: str, parallelism: int, seed: int | None = None,
                        run_id: str | None = None, model: str | None = None, base_url: str | None = None,
                        families: list[str] | None = None) -> dict:
    from synthesis.config import SynthConfig
    from synthesis.pipeline import synthesize
    from synthesis.runtime.factory import make_runtime

    logger = get_run_logger()
    config = SynthConfig(domain=domain, n=n, backend=backend, purpose=purpose, workers=parallelism, seed=seed,
                         families=families)
    runtime = make_runtime(backend, model=model, base_url=base_url)

    def progress(stage: str, event: str, data: dict) -> None:
        if event in ("done", "start"):
            logger.info("%s %s %s", stage, event, {k: v for k, v in data.items() if k != "dirs"})

    limit = PAID_BACKEND_LIMITS.get(backend)
    if limit is None:
        report = await synthesize(config, runtime=runtime, run_id=run_id, progress=progress)
    else:  # paid API: the global concurrency limit (created by `openforge init`) caps it
        from prefect.concurrency.asyncio import concurrency

        async with concurrency(limit, occupy=1, strict=True):
            report = await synthesize(config, runtime=runtime, run_id=run_id, progress=progress)
    return report.model_dump(mode="json")
