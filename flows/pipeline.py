"""Flow ``pipeline``: synthesize → distill → SFT → evaluate → GRPO → evaluate, end to end.

The main job on the embedded defaults (``openforge pipeline --preset local``): procedural
claw tasks, the oracle teacher, the local engine and trainer, local sandboxes. RL and SFT
tasks come from separate synthesis runs; evaluation uses held-out RL tasks.
"""

from __future__ import annotations

import time

from prefect import flow

from flows.artifacts import png_markdown, publish_markdown, publish_table, rows_markdown
from flows.params import PipelineParams, SynthesizeParams
from flows.progress import stage
from flows.synthesize import synthesize_flow
from flows.learning import publish_evaluation
from tasks.training import distill_task, evaluate_task, rl_task, sft_task

STAGES = ("synthesize RL tasks", "synthesize SFT tasks", "distill", "SFT", "evaluate base", "evaluate SFT",
          "GRPO", "evaluate SFT+RL")


@flow(name="pipeline")
async def pipeline_flow(params: PipelineParams = PipelineParams()) -> dict:
    """The whole chain on one preset. Returns before/after metrics and artifact paths."""
    from training.workflows.evaluate import EvalReport

    t0 = time.perf_counter()
    n = len(STAGES)
    stage(STAGES[0], 1, n)
    rl_syn = await synthesize_flow(SynthesizeParams(domain="claw", n=params.n_rl_tasks + params.eval_tasks,
                                                    purpose="rl", seed=params.seed))
    rl_dirs = sorted(rl_syn["verified_dirs"])
    if len(rl_dirs) < params.n_rl_tasks + params.eval_tasks:
        raise RuntimeError(f"synthesis verified only {len(rl_dirs)} RL tasks of {params.n_rl_tasks + params.eval_tasks}")
    eval_dirs, train_dirs = rl_dirs[: params.eval_tasks], rl_dirs[params.eval_tasks:]
    stage(STAGES[1], 2, n)
    sft_syn = await synthesize_flow(SynthesizeParams(domain="claw", n=params.n_sft_tasks, purpose="sft", seed=params.seed + 1))
    stage(STAGES[2], 3, n)
    distilled = await distill_task(params.preset, params.overrides, sorted(sft_syn["verified_dirs"]), params.teacher, 3)
    stage(STAGES[3], 4, n)
    sft = sft_task(params.preset, params.overrides, distilled["parquet"], None)
    evals = {}
    for index, (label, path) in enumerate((("base", None), ("sft", sft["checkpoint"])), start=5):
        stage(STAGES[index - 1], index, n)
        evals[label] = await evaluate_task(params.preset, params.overrides, eval_dirs, path, label, ["react"], 1)
    stage(STAGES[6], 7, n)
    rl = await rl_task(params.preset, params.overrides, train_dirs, sft["checkpoint"], params.rl_steps) if params.rl_steps else None
    stage(STAGES[7], 8, n)
    final_ckpt = rl["checkpoint"] if rl else sft["checkpoint"]
    evals["sft+rl"] = await evaluate_task(params.preset, params.overrides, eval_dirs, final_ckpt, "sft+rl", ["react"], 1)
    evaluation = await publish_evaluation([EvalReport.model_validate(e) for e in evals.values()])
    summary = {
        "seconds": time.perf_counter() - t0,
        "tasks": {"rl_train": len(train_dirs), "eval": len(eval_dirs), "sft": len(sft_syn["verified_dirs"])},
        "distill": {k: distilled[k] for k in ("rollouts", "kept_trajectories", "examples", "parquet")},
        "sft": {"examples": sft["examples"], "final_loss": sft["losses"][-1] if sft["losses"] else None,
                "checkpoint": sft["checkpoint"], "curve_png": sft["curve_png"]},
        "rl": {"steps": [{"step": s["step"], "reward": s["reward_mean"]} for s in rl["steps"]],
               "checkpoint": rl["checkpoint"], "curve_png": rl["curve_png"]} if rl else None,
        "eval_mean_reward": {label: EvalReport.model_validate(e).mean_reward for label, e in evals.items()},
        "radar_png": evaluation["radar_png"],
    }
    rows = [{"checkpoint": k, "mean_reward": round(v, 4)} for k, v in summary["eval_mean_reward"].items()]
    await publish_table("pipeline-summary", rows, "Held-out mean reward before/after")
    await publish_markdown("pipeline-report", "# Pipeline\n\n" + rows_markdown(rows)
                     + png_markdown(summary["sft"]["curve_png"], "SFT loss")
                     + (png_markdown(rl["curve_png"], "GRPO curves") if rl else "")
                     + png_markdown(evaluation["radar_png"], "capabilities"), "Pipeline summary")
    return summary
