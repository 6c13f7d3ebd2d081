"""Prefect task: one synthesis run (resumable; every stage records its progress in the DB)."""

from __future__ import annotations

from prefect import get_run_logger, task

from flows.params import SynthesizeParams
from tasks.retry import infra_only

PAID_BACKEND_LIMITS = {"claude": "anthropic-api", "openai": "openai-api"}


@task(name="synthesize", retries=2, retry_delay_seconds=5, retry_condition_fn=infra_only)
async def run_synthesis(params: SynthesizeParams) -> dict:
    from synthesis.config import SynthConfig
    from synthesis.pipeline import synthesize
    from synthesis.runtime.factory import make_runtime

    logger = get_run_logger()
    config = SynthConfig(domain=params.domain, n=params.n, backend=params.backend, purpose=params.purpose,
                         workers=params.parallelism, seed=params.seed)
    runtime = make_runtime(params.backend, model=params.model, base_url=params.base_url)

    def progress(stage: str, event: str, data: dict) -> None:
        if event in ("done", "start"):
            logger.info("%s %s %s", stage, event, {k: v for k, v in data.items() if k != "dirs"})

    limit = PAID_BACKEND_LIMITS.get(params.backend)
    if limit is None:
        report = await synthesize(config, runtime=runtime, run_id=params.run_id, progress=progress)
    else:  # paid API: the global concurrency limit (created by `openforge init`) caps it
        from prefect.concurrency.asyncio import concurrency

        async with concurrency(limit, occupy=1, strict=True):
            report = await synthesize(config, runtime=runtime, run_id=params.run_id, progress=progress)
    return report.model_dump(mode="json")
