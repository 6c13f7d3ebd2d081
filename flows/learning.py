"""Flows ``distill``, ``sft-train``, ``rl-train`` and ``evaluate`` (module not named
``training``: Prefect loads flow scripts with their folder on sys.path, where a
``flows/training.py`` would shadow the ``training`` package). Each flow is a short list of
steps over the task bank, calling the training workflows through thin Prefect tasks.

Like ``pipeline``, each persists its tasks' results in the data dir (``tasks.cache.in_data_dir``)
and reuses one whose inputs are unchanged unless ``params.fresh``; each task runs under the
ceiling its preset budgets (``tasks.budgets``; docs/resume.md)."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import png_markdown, publish_markdown, publish_table, rows_markdown
from flows.checks import no_tasks
from flows.params import DistillParams, EvaluateParams, RLParams, SFTParams
from openforge.presets import load_preset
from tasks import budgets
from tasks.bank import select_task_dirs
from tasks.cache import in_data_dir, refreshing
from tasks.training import distill_task, evaluate_task, rl_task, sft_examples, sft_task


@flow(name="distill")
async def distill_flow(params: DistillParams = DistillParams()) -> dict:
    """Teacher rollouts (N per task, default 3) through the real rollout path; successful
    trajectories are filtered as in the paper and exported as chat JSONL + token Parquet."""
    preset = load_preset(params.preset, params.overrides)
    dirs = select_task_dirs(params.domain, params.purpose, params.max_tasks)
    if not dirs:
        raise no_tasks("distill", params.domain, params.purpose)
    distill = in_data_dir(distill_task, budgets.distill_s(preset, len(dirs), params.n_per_task))
    with refreshing(params.fresh):
        report = await distill(params.preset, params.overrides, dirs, params.teacher, params.n_per_task)
    await publish_table("distill-outcomes", [{"outcome": k, "rollouts": v} for k, v in report.outcomes.items()],
                  f"Distillation {report.run_id}: rollout outcome classes")
    await publish_table("distill-summary", [report.model_dump(include={"teacher", "tasks", "rollouts", "kept_trajectories", "examples", "parquet"})],
                  "Distillation: what was kept")
    return report.model_dump(mode="json")


@flow(name="sft-train")
async def sft_flow(params: SFTParams) -> dict:
    """Supervised fine-tuning on distilled examples (loss on policy tokens only); saves an
    HF checkpoint and publishes the loss curve."""
    preset = load_preset(params.preset, params.overrides)
    sft = in_data_dir(sft_task, budgets.sft_s(preset, sft_examples(params.data)))
    with refreshing(params.fresh):
        report = await sft(params.preset, params.overrides, params.data, params.model_path)
    await publish_markdown("sft-report", f"# SFT {report.run_id}\n\n{report.examples} examples "
                     f"({report.overlong_dropped} dropped as overlong), {report.updates} updates, checkpoint "
                     f"`{report.checkpoint}`\n\n" + png_markdown(report.curve_png, "SFT loss"), "SFT loss curve")
    return report.model_dump(mode="json")


@flow(name="rl-train")
async def rl_flow(params: RLParams = RLParams()) -> dict:
    """GRPO inside the real harness: each step rolls out task groups in sandboxes through the
    recording proxy, rebuilds one sample per model call, and updates the policy in place.
    Publishes per-step reward/loss tables and reward / success / episode-length curves."""
    from training.workflows.compose import compose

    preset = load_preset(params.preset, params.overrides)
    # what the preset composes to on this machine, refused in one line before any task starts
    compose(preset, "rl", params.model_path).require_runnable()
    domain = params.domain or preset.tasks.domain
    dirs = select_task_dirs(domain, params.purpose, params.max_tasks)
    if not dirs:
        raise no_tasks("rl-train", domain, params.purpose)
    grpo = in_data_dir(rl_task, budgets.rl_s(preset, params.steps))
    with refreshing(params.fresh):
        report = await grpo(params.preset, params.overrides, dirs, params.model_path, params.steps)
    rows = rl_step_rows(report)
    await publish_table("rl-steps", rows, f"GRPO {report.run_id}: per-step reward and loss")
    await publish_markdown("rl-report", f"# GRPO {report.run_id} ({report.preset})\n\n" + rows_markdown(rows)
                     + "\n" + png_markdown(report.curve_png, "reward curves"), "GRPO curves")
    return report.model_dump(mode="json")


def rl_step_rows(report) -> list[dict]:  # noqa: ANN001 - training.workflows.rl.RLReport (loads torch)
    return [{"step": s.step, "reward": round(s.reward_mean, 4), "success": round(s.success_rate, 4),
             "calls": round(s.episode_calls, 2), "samples": s.samples, "overlong_dropped": s.overlong_dropped,
             "cut_replies": int(s.metrics.get("cut_reply_rollouts", 0)),
             "zero_var_groups": f"{s.zero_variance_groups}/{s.groups}", "updates": s.updates,
             "loss": round(s.metrics.get("loss", 0.0), 5), "outcomes": s.outcomes,
             "seconds": round(s.seconds, 2), "engine_idle": round(s.engine_idle_seconds / max(s.seconds, 1e-9), 3),
             "trainer_idle": round(s.trainer_idle_seconds / max(s.seconds, 1e-9), 3),
             "staleness": {str(k): v for k, v in s.staleness.items()},
             "stale_dropped": s.stale_dropped, "stale_corrected": s.stale_corrected} for s in report.steps]


@flow(name="evaluate")
async def evaluate_flow(params: EvaluateParams = EvaluateParams()) -> dict:
    """pass@k and pass^k per harness for one or more checkpoints, plus tool usage and the
    five behavioural capabilities (radar chart comparing the checkpoints)."""
    from training.workflows.evaluate import EvalReport

    dirs = select_task_dirs(params.domain, params.purpose, params.max_tasks)
    if not dirs:
        raise no_tasks("evaluate", params.domain, params.purpose)
    labels = params.labels or [p or "base" for p in params.model_paths]
    preset = load_preset(params.preset, params.overrides)
    evaluate = in_data_dir(evaluate_task, budgets.evaluate_s(preset, len(dirs), params.k, len(params.harnesses)))
    with refreshing(params.fresh):
        reports: list[EvalReport] = [
            await evaluate(params.preset, params.overrides, dirs, path, label, params.harnesses, params.k)
            for path, label in zip(params.model_paths, labels, strict=True)
        ]
    return await publish_evaluation(reports)


async def publish_evaluation(reports: list) -> dict:
    """Tables + radar chart of evaluation reports; returns them as plain data."""
    from openforge.settings import get_settings
    from training.workflows.evaluate import compare_png, summary_rows

    rows = summary_rows(reports)
    await publish_table("evaluation", rows, "pass@k / pass^k per checkpoint and harness")
    caps = [{"checkpoint": r.label, **{k: round(v, 3) for k, v in r.capabilities.items()}} for r in reports]
    await publish_table("behaviour", caps, "Behavioural capabilities per checkpoint")
    usage = [{"checkpoint": r.label, "tool": t, "calls": n} for r in reports for t, n in r.tool_usage.items()]
    await publish_table("tool-usage", usage, "Tool calls per tool")
    radar = compare_png(reports, get_settings().runs_dir / "evaluation" / f"radar-{'-vs-'.join(r.label for r in reports)}.png")
    await publish_markdown("evaluation-report", "# Evaluation\n\n" + rows_markdown(rows) + "\n" + rows_markdown(caps) + "\n"
                     + png_markdown(radar, "capabilities radar"), "Evaluation report")
    return {"rows": rows, "capabilities": caps, "radar_png": str(radar), "reports": [r.model_dump(mode="json") for r in reports]}
