"""Prefect task: one synthesis run (resumable; every stage records its progress in the DB).

A seeded (or named) run's report is cached by its parameters (:data:`tasks.stage_keys.SYNTHESIS_KEY`),
so a re-run pipeline reuses the tasks it made instead of synthesizing new ones. Every check
of the test stage (oracle, no-op and, with ``k_rollouts``, the test model ``k`` times per task)
runs on the real rollout path (:func:`sandbox_rollouts`: a sandbox each, a proxy for the model)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task

from tasks.cache import note_reuse
from tasks.paid_api import gate_for_backend
from tasks.progress import Tracker, track
from tasks.retry import infra_only
from tasks.stage_keys import SYNTHESIS_KEY

if TYPE_CHECKING:
    from synthesis.checker import CheckOutcome, RolloutFn

#: Hang guard of a whole synthesis run: no preset budgets it (the agents' own budgets are turns
#: and dollars), so a generous ceiling well above a nightly paid run of tens of tasks.
SYNTHESIS_TIMEOUT_S = 12 * 3600


def sandbox_rollouts(sandbox: str, engine: str | None, model: str = "policy") -> RolloutFn:
    """Every check of the test stage — oracle, no-op, and the test model's ``k`` rollouts — on
    the real rollout path (:func:`training.orchestrator.single.rollout_once`: the in-sandbox
    runner in a ``sandbox`` sandbox, and a proxy in front of ``engine`` for model harnesses).
    Oracle and no-op checks are not recorded as rollouts in the DB (the synthesis run's
    ``checks`` rows record them)."""
    from synthesis.checker import NOOP, ORACLE, CheckOutcome

    async def run(task_dir: Path, harness: str) -> CheckOutcome:
        from training.orchestrator.single import rollout_once

        doc = await rollout_once(str(task_dir), harness, backend=sandbox, engine=engine, model=model,
                                 record=harness not in (ORACLE, NOOP))
        return CheckOutcome.from_rollout(harness, doc)

    return run


def stage_progress(tracker: Tracker) -> Any:
    """A :func:`synthesis.pipeline.synthesize` progress callback moving ``tracker`` on by the
    tasks the test stage verifies (its count is 1 exactly when a task ends verified), with
    every stage's running count as the note."""
    counts: dict[str, int] = {}

    def progress(stage: str, event: str, data: dict[str, Any]) -> None:
        if event != "done" or not data.get("count"):
            return
        counts[stage] = counts.get(stage, 0) + int(data["count"])
        note = ", ".join(f"{s} {c}" for s, c in counts.items())
        if stage == "test":
            tracker.advance(int(data["count"]), note=note)
        else:
            tracker.update(tracker.done, note=note)

    return progress


@task(name="synthesize", retries=2, retry_delay_seconds=5, retry_condition_fn=infra_only,
      cache_policy=SYNTHESIS_KEY, result_serializer="json", timeout_seconds=SYNTHESIS_TIMEOUT_S,
      on_completion=[note_reuse])
async def run_synthesis(domain: str, n: int, purpose: str, backend: str, parallelism: int, seed: int | None = None,
                        run_id: str | None = None, model: str | None = None, base_url: str | None = None,
                        families: list[str] | None = None, k_rollouts: int = 0, test_harness: str = "mini",
                        test_engine: str | None = None, sandbox: str = "local", max_refine: int = 2,
                        tau: float | None = None, pool: str | None = None, judge: str = "heuristic") -> dict:
    from synthesis.checker import RolloutChecker
    from synthesis.config import SynthConfig
    from synthesis.pipeline import synthesize
    from synthesis.runtime.factory import make_runtime

    config = SynthConfig(domain=domain, n=n, backend=backend, purpose=purpose, workers=parallelism, seed=seed,
                         families=families, k_rollouts=k_rollouts, test_harness=test_harness, max_refine=max_refine,
                         tau=tau, pool=pool, quality_judge=judge)
    # paid APIs: every call holds a slot of the API's global concurrency limit and one start of
    # its rate limit (tasks.paid_api; created by `openforge init`), whatever the parallelism
    runtime = make_runtime(backend, model=model, base_url=base_url, gate=gate_for_backend(backend))
    checker = RolloutChecker(sandbox_rollouts(sandbox, test_engine))
    progress = stage_progress(track(f"synthesis-{domain}-{purpose}", f"synthesis ({domain}, {purpose})", n, "verified"))

    report = await synthesize(config, runtime=runtime, checker=checker, run_id=run_id, progress=progress)
    return report.model_dump(mode="json")
