"""Flow ``pipeline``: synthesize → distill → SFT → evaluate → GRPO → evaluate, end to end.

The main job on the embedded defaults (``openforge pipeline --preset local``): procedural
claw tasks of one family (default ``contact-lookup``: one tool, graded checks, a task the
base policy solves a little), the oracle teacher, the local engine and trainer, local
sandboxes. RL and SFT tasks come from separate synthesis runs; evaluation uses held-out RL
tasks, ``eval_samples`` rollouts each (the base policy ``base_eval_samples``), reported as
mean ± standard error over the rollouts; each stage's gain over the one before is paired by
held-out task (:func:`step_up`).
The summary says per stage how many optimiser updates it made and on how many samples;
a GRPO stage that made none fails the run (``NoLearningSignal``) instead of reporting the
SFT weights again as "SFT+RL".
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from prefect import flow

from flows.artifacts import png_markdown, publish_markdown, publish_table, rows_markdown
from flows.learning import publish_evaluation, rl_step_rows
from flows.params import PipelineParams, SynthesizeParams
from flows.synthesize import synthesize_flow
from openforge.presets import load_preset
from tasks import budgets
from tasks.cache import in_data_dir, noting_reuse, refreshing, results_dir
from tasks.progress import stage
from tasks.training import distill_task, evaluate_task, rl_task, sft_examples, sft_task

if TYPE_CHECKING:
    from training.workflows.evaluate import EvalReport  # loads torch

STAGES = ("synthesize RL tasks", "synthesize SFT tasks", "distill + SFT, evaluate base alongside", "GRPO",
          "evaluate SFT and SFT+RL side by side")


async def _settle(job: asyncio.Future) -> None:
    """Cancel ``job`` if a sibling stage failed first, and wait until it has cleaned up
    (its rollouts' sandboxes, its engine) before the failure propagates."""
    if not job.done():
        job.cancel()
    with contextlib.suppress(BaseException):
        await job


def _stage_row(stage_name: str, report: EvalReport, updates: int | None, samples: int | None, note: str = "",
               previous: EvalReport | None = None) -> dict:
    # rollouts that ended without a score (timeout, infra error): not in n, said in the table
    unscored = sum(v for h in report.harnesses for k, v in h.outcomes.items() if "/" not in k and k != "ok")
    row = {"stage": stage_name, "n": report.samples, "unscored": unscored, "mean_reward": round(report.mean_reward, 4),
           "stderr": round(report.stderr, 4), "updates": updates, "samples_trained": samples, "note": note}
    if previous is not None:
        row.update(step_up(previous, report))
    return row


def step_up(before: EvalReport, after: EvalReport) -> dict:
    """The gain of ``after`` over ``before`` with its standard error, paired by held-out task
    (:func:`training.workflows.evaluate.gain_over`). ``clear`` is gain > 2·SE."""
    from training.workflows.evaluate import gain_over

    up = gain_over(before, after)
    return {"gain": round(up.gain, 4), "gain_se": round(up.se, 4), "paired_tasks": up.paired_tasks,
            "clear": up.clear}


@flow(name="pipeline")
async def pipeline_flow(params: PipelineParams = PipelineParams()) -> dict:
    """The whole chain on one preset. Returns before/after metrics and artifact paths.

    Resumable: every stage's result is cached under the data dir by the content of its inputs
    (docs/resume.md), so a re-run starts at the first stage whose inputs changed;
    ``params.fresh`` runs every stage again."""
    with refreshing(params.fresh), noting_reuse() as reused:
        return await _pipeline(params, reused)


async def _pipeline(params: PipelineParams, reused: list[str]) -> dict:
    t0 = time.perf_counter()
    n = len(STAGES)
    preset = load_preset(params.preset, params.overrides)
    families = [params.family] if params.family else None
    # its synthesis task's cached report goes to the data dir; the subflow's own return is not kept
    synthesize = synthesize_flow.with_options(result_storage=results_dir(), persist_result=False)
    stage(STAGES[0], 1, n)
    rl_syn = await synthesize(SynthesizeParams(domain="claw", n=params.n_rl_tasks + params.eval_tasks,
                                               purpose="rl", seed=params.seed, families=families,
                                               parallelism=params.synth_parallelism))
    rl_dirs = sorted(rl_syn["verified_dirs"])
    if len(rl_dirs) < params.n_rl_tasks + params.eval_tasks:
        raise RuntimeError(f"synthesis verified only {len(rl_dirs)} RL tasks of {params.n_rl_tasks + params.eval_tasks}")
    eval_dirs, train_dirs = rl_dirs[: params.eval_tasks], rl_dirs[params.eval_tasks:]
    stage(STAGES[1], 2, n)
    sft_syn = await synthesize(SynthesizeParams(domain="claw", n=params.n_sft_tasks, purpose="sft",
                                                seed=params.seed + 1, families=families,
                                                parallelism=params.synth_parallelism))
    sft_dirs = sorted(sft_syn["verified_dirs"])

    def evaluation(checkpoint: str | None, label: str, samples: int) -> asyncio.Future:
        evaluate = in_data_dir(evaluate_task, budgets.evaluate_s(preset, len(eval_dirs), samples, 1))
        return asyncio.ensure_future(evaluate(params.preset, params.overrides, eval_dirs, checkpoint, label, ["react"], 1,
                                              samples))

    # What runs side by side (measured on 2 cores, issue 13's note): the base evaluation beside
    # distillation + SFT (its rollouts are short and end before SFT does at the default
    # ``base_eval_samples``); GRPO alone, because an evaluation beside it slowed every step
    # more than it saved (its 32 rollouts held the engine core and the step waited for its
    # slowest rollout); the SFT and SFT+RL evaluations together at the end, each engine on
    # its own core. Each evaluation has its own engine; results do not depend on timing.
    stage(STAGES[2], 3, n)
    base_eval = evaluation(None, "base", params.base_eval_samples)
    try:
        distill = in_data_dir(distill_task, budgets.distill_s(preset, len(sft_dirs), None))
        distilled = await distill(params.preset, params.overrides, sft_dirs, params.teacher, None)
        # trains in a worker thread, so the event loop keeps the evaluation going (tasks/training.py)
        sft_run = in_data_dir(sft_task, budgets.sft_s(preset, sft_examples(distilled.parquet)))
        sft = await sft_run(params.preset, params.overrides, distilled.parquet, None)
        evals = {"base": await base_eval}
    finally:
        await _settle(base_eval)
    stage(STAGES[3], 4, n)
    rl = None
    if params.rl_steps != 0:
        grpo = in_data_dir(rl_task, budgets.rl_s(preset, params.rl_steps))
        rl = await grpo(params.preset, params.overrides, train_dirs, sft.checkpoint, params.rl_steps)
    stage(STAGES[4], 5, n)
    sft_eval = evaluation(sft.checkpoint, "sft", params.eval_samples)
    rl_eval = evaluation(rl.checkpoint if rl else sft.checkpoint, "sft+rl", params.eval_samples)
    try:
        evals["sft"] = await sft_eval
        evals["sft+rl"] = await rl_eval
    finally:
        await _settle(sft_eval)
        await _settle(rl_eval)
    report = await publish_evaluation(list(evals.values()))
    stages = [
        _stage_row("base", evals["base"], None, None, "the starting policy"),
        _stage_row("sft", evals["sft"], sft.updates, sft.examples_trained,
                   f"{sft.examples} examples from {distilled.kept_trajectories} teacher successes"
                   + (f", {sft.overlong_dropped} dropped as overlong" if sft.overlong_dropped else ""),
                   previous=evals["base"]),
        _stage_row("sft+rl", evals["sft+rl"], rl.updates if rl else 0, rl.samples_trained if rl else 0,
                   (f"{len(rl.steps)} GRPO steps, {sum(s.zero_variance_groups for s in rl.steps)} of "
                    f"{sum(s.groups for s in rl.steps)} groups zero-variance") if rl
                   else "GRPO skipped (rl_steps = 0): these are the SFT weights", previous=evals["sft"]),
    ]
    summary = {
        "seconds": time.perf_counter() - t0,
        "tasks": {"rl_train": len(train_dirs), "eval": len(eval_dirs), "sft": len(sft_syn["verified_dirs"])},
        "distill": distilled.model_dump(include={"rollouts", "kept_trajectories", "examples", "parquet"}),
        "sft": {"examples": sft.examples, "examples_trained": sft.examples_trained, "overlong_dropped": sft.overlong_dropped,
                "updates": sft.updates, "final_loss": sft.losses[-1] if sft.losses else None,
                "checkpoint": sft.checkpoint, "curve_png": sft.curve_png},
        "rl": {"steps": rl_step_rows(rl), "updates": rl.updates, "samples_trained": rl.samples_trained,
               "checkpoint": rl.checkpoint, "curve_png": rl.curve_png} if rl else None,
        "stages": stages,
        "eval_mean_reward": {label: e.mean_reward for label, e in evals.items()},
        "eval_stderr": {label: e.stderr for label, e in evals.items()},
        "radar_png": report["radar_png"],
        "reused": reused,
    }
    await publish_table("pipeline-summary", stages, "Held-out reward per stage (mean ± SE over n rollouts), updates")
    await publish_markdown("pipeline-report", "# Pipeline\n\n" + rows_markdown(stages)
                     + png_markdown(sft.curve_png, "SFT loss")
                     + (png_markdown(rl.curve_png, "GRPO curves") if rl else "")
                     + png_markdown(report["radar_png"], "capabilities"), "Pipeline summary")
    return summary
