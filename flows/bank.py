"""Flows ``init``, ``tasks-import``, ``tasks-verify`` and ``tasks-export``: the data dir and the
task bank. ``openforge init`` and ``openforge tasks import|verify|export`` run them in-process
with the parameters their deployments take (:mod:`flows.params`); each is one step over a plain
function (``tasks.bank``) and publishes what it did as a table artifact.

Synchronous flows: ``tasks verify`` runs every oracle / no-op rollout with an event loop of its
own, so the flow stays in the caller's main thread, where Ctrl-C reaches the rollout in flight
(its sandbox is removed) as it did before these commands were flow runs."""

from __future__ import annotations

from prefect import flow

from environments.bank import dirs_to_verify
from flows.artifacts import publish_table_sync
from flows.checks import check_import, check_task_db
from flows.params import InitParams, TasksExportParams, TasksImportParams, TasksVerifyParams
from tasks.bank import export_bank_tasks, import_task_dirs, init_data_dir, verify_bank_tasks
from tasks.budgets import verify_s


@flow(name="init")
def init_flow(params: InitParams = InitParams()) -> dict:
    """Create the data dir and the task DB (migrations to the newest revision) and, with
    `limits`, the paid-API concurrency and rate limits on the Prefect API of this run
    (idempotent: a second run keeps what the first made)."""
    from flows.limits import ensure_paid_api_limits

    check_task_db("init")
    info = init_data_dir()
    if params.limits:
        info["limits"] = [state.line() for state in ensure_paid_api_limits()]
    return info


@flow(name="tasks-import")
def tasks_import_flow(params: TasksImportParams) -> dict:
    """Copy Harbor / Terminal-Bench task dirs into the bank with Harbor's meaning; they are
    `imported` until `tasks-verify` passes them. Invalid dirs are reported as problems and
    nothing of them is written."""
    check_import(params)
    check_task_db("tasks import")
    report = import_task_dirs(params.paths, params.purpose)
    publish_table_sync("tasks-import", [*({"task": r["id"], "dir": r["dir"], "problem": ""} for r in report["imported"]),
                                        *({"task": "", "dir": "", "problem": p} for p in report["problems"])],
                       f"Imported {len(report['imported'])} task(s), {len(report['problems'])} problem(s)")
    return report


@flow(name="tasks-verify")
def tasks_verify_flow(params: TasksVerifyParams = TasksVerifyParams()) -> list[dict]:
    """Run the oracle (must score 1) and the no-op agent (must score 0) on each task (default:
    every imported one) in `backend` sandboxes; passing tasks become `verified`, the others
    keep their status with the reason in `error`."""
    check_task_db("tasks verify")
    # a hang guard (Prefect TimedOut) past every check rollout's own hard deadline
    verify = verify_bank_tasks.with_options(timeout_seconds=verify_s(dirs_to_verify(params.task_ids)))
    rows = verify(params.task_ids, params.backend)
    publish_table_sync("tasks-verify", rows,
                       f"{sum(r['passed'] for r in rows)}/{len(rows)} task(s) verified on {params.backend}")
    return rows


@flow(name="tasks-export")
def tasks_export_flow(params: TasksExportParams) -> list[dict]:
    """Write bank tasks (the given ids, else every task with `status`) as Harbor task dirs
    under `dest` (`harbor run -p DEST/<id>` reads them)."""
    check_task_db("tasks export")
    rows = export_bank_tasks(params.dest, params.task_ids, params.status)
    publish_table_sync("tasks-export", rows, f"{len(rows)} task(s) exported to {params.dest}")
    return rows
