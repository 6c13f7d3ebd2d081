"""Flows ``rollout`` and ``export-atif``: one rollout on the real rollout path, and recorded
rollouts as Harbor's ATIF trajectories. ``openforge rollout`` and ``openforge export-atif`` run
them in-process with the parameters a deployment would take (:mod:`flows.params`)."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import publish_table, publish_table_sync
from flows.checks import check_rollout, check_task_db
from flows.params import ExportAtifParams, RolloutParams
from openforge.presets import load_preset
from tasks.budgets import single_rollout_s
from tasks.rollouts import export_atif_task, rollout_task


@flow(name="rollout")
async def rollout_flow(params: RolloutParams) -> dict:
    """One rollout of `harness` on `task_dir` in a `backend` sandbox (with `engine`, through a
    recording proxy whose generation budget is the preset's `[rollout]` caps unless
    `max_tokens` / `max_total_tokens` are given); returns its outcome (status, reward,
    error_kind, n_calls, seconds, rollout_id, logs_dir)."""
    check_rollout(params)
    caps = load_preset(params.preset).rollout
    # a hang guard (Prefect TimedOut) past the rollout's own hard deadline, as for the learning-loop tasks
    rollout = rollout_task.with_options(timeout_seconds=single_rollout_s(params.task_dir, params.timeout))
    doc = await rollout(params.task_dir, params.harness, params.backend, params.engine, params.timeout,
                        params.model, params.harness_options, params.max_tokens or caps.max_tokens,
                        params.max_total_tokens or caps.max_total_tokens)
    await publish_table("rollout", [{k: doc.get(k) for k in ("rollout_id", "task_id", "harness", "status", "reward",
                                                              "error_kind", "n_calls", "seconds", "logs_dir")}],
                        f"Rollout of {params.harness} on {params.task_dir}")
    return doc


@flow(name="export-atif")
def export_atif_flow(params: ExportAtifParams) -> list[str]:
    """Write recorded rollouts as ATIF trajectories, `<out>/<rollout id>.trajectory.json`
    (chat-API calls only)."""
    check_task_db("export-atif", migrated=True)
    paths = export_atif_task(params.rollout_ids, params.out)
    publish_table_sync("export-atif", [{"rollout": r, "file": p} for r, p in zip(params.rollout_ids, paths, strict=True)],
                       f"{len(paths)} ATIF trajectory file(s) in {params.out}")
    return paths
