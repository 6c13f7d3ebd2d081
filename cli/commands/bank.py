"""``openforge init``, ``db status`` and ``tasks validate|import|verify|export|ls|show``: the data
dir, the task DB and the task bank. ``init`` and ``tasks import|verify|export`` change things:
each runs its flow (flows/bank.py) with the parameters its deployment takes; ``db status`` and
``tasks validate|ls|show`` only read, and call plain helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from cli.common import echo_json, params, run_flow

db_app = typer.Typer(help="The task DB.", no_args_is_help=True)
tasks_app = typer.Typer(help="The task bank: validate, import, verify, export, list, show.", no_args_is_help=True)
console = Console()


def init(
    limits: Annotated[bool, typer.Option("--limits/--no-limits", help="Create the paid-API concurrency and rate "
                                         "limits on the Prefect API (PREFECT_API_URL, else the embedded one).")] = True,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Create the data dir and the DB, run migrations, and create the paid-API limits (idempotent)."""
    from flows.bank import init_flow
    from flows.checks import check_task_db
    from flows.params import InitParams

    p = params(InitParams, "init", limits=limits)
    check_task_db("init")  # OPENFORGE_DB parses and answers: before Prefect starts
    info = run_flow(init_flow, p, label="init", quiet=json_out)
    if json_out:
        echo_json(info)
        return
    console.print(f"data dir  {info['home']}\nDB        {info['db']}\nrevision  {info['revision']}")
    for line in info.get("limits", []):
        console.print(line)


@db_app.command("status")
def db_status(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the DB URL, migration revision and row counts per table and status."""
    from storage.admin import db_status as status

    info = status()
    if json_out:
        echo_json(info)
        return
    console.print(f"DB {info['db']}  revision {info['revision']} (head {info['head']})")
    table = Table("table", "rows", "by status")
    for name, entry in info["tables"].items():
        by = ", ".join(f"{k}={v}" for k, v in entry.get("by_status", {}).items())
        table.add_row(name, str(entry["rows"]), by)
    console.print(table)


@tasks_app.command("validate")
def tasks_validate(
    paths: Annotated[list[Path], typer.Argument(help="Task directories.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check task directories; one line per problem; exit 1 on any problem."""
    from environments.taskdir import validate_task

    problems = [p for path in paths for p in validate_task(path)]
    if json_out:
        echo_json([{"path": p.path, "field": p.field, "problem": p.message} for p in problems])
    else:
        for p in problems:
            typer.echo(str(p))
        if not problems:
            typer.echo(f"{len(paths)} task dir(s) valid")
    raise typer.Exit(1 if problems else 0)


@tasks_app.command("import")
def tasks_import(
    paths: Annotated[list[Path], typer.Argument(help="Harbor / Terminal-Bench task dirs, dataset folders "
                                                     "(or a Harbor download cache), or registry.json listings.")],
    purpose: Annotated[Optional[str], typer.Option(help="Set metadata.openforge.purpose (rl or sft).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy tasks into the bank with Harbor's meaning; they are `imported` until `tasks verify`."""
    from flows.bank import tasks_import_flow
    from flows.checks import check_import, check_task_db
    from flows.params import TasksImportParams

    p = params(TasksImportParams, "tasks import", paths=[os.path.abspath(path) for path in paths], purpose=purpose)
    check_import(p)
    check_task_db("tasks import")
    report = run_flow(tasks_import_flow, p, label="tasks-import", quiet=json_out)
    imported, problems = report["imported"], report["problems"]
    if json_out:
        echo_json(report)
    else:
        for problem in problems:
            typer.echo(problem)
        for row in imported:
            typer.echo(f"imported {row['id']} -> {row['dir']}")
    raise typer.Exit(1 if problems else 0)


@tasks_app.command("verify")
def tasks_verify(
    task_ids: Annotated[Optional[list[str]], typer.Argument(help="Task ids (default: every imported task).")] = None,
    backend: Annotated[str, typer.Option(help="Sandbox backend: local, docker or kubernetes.")] = "local",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run the oracle (must score 1) and the no-op agent (must score 0); passing tasks become verified."""
    from flows.bank import tasks_verify_flow
    from flows.checks import check_task_db
    from flows.params import TasksVerifyParams

    p = params(TasksVerifyParams, "tasks verify", task_ids=task_ids or None, backend=backend)
    check_task_db("tasks verify")
    rows = run_flow(tasks_verify_flow, p, label="tasks-verify", quiet=json_out,
                    interrupted="interrupted: tasks verified so far stay verified; re-run the same command for the rest")
    if json_out:
        echo_json(rows)
    else:
        for r in rows:
            typer.echo(f"{'verified' if r['passed'] else 'failed  '} {r['id']}" + (f": {r['error']}" if r["error"] else ""))
        typer.echo(f"{sum(r['passed'] for r in rows)}/{len(rows)} task(s) verified")
    raise typer.Exit(0 if all(r["passed"] for r in rows) else 1)


@tasks_app.command("export")
def tasks_export(
    dest: Annotated[Path, typer.Argument(help="Folder to write the tasks to (one dir per task).")],
    task_ids: Annotated[Optional[list[str]], typer.Argument(help="Task ids (default: by --status).")] = None,
    status: Annotated[str, typer.Option(help="Export every task with this status.")] = "verified",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Write bank tasks as Harbor task dirs (`harbor run -p DEST/<id>` reads them)."""
    from flows.bank import tasks_export_flow
    from flows.checks import check_task_db
    from flows.params import TasksExportParams

    p = params(TasksExportParams, "tasks export", dest=os.path.abspath(dest), task_ids=task_ids or None, status=status)
    check_task_db("tasks export")
    rows = run_flow(tasks_export_flow, p, label="tasks-export", quiet=json_out)
    if json_out:
        echo_json(rows)
    else:
        for r in rows:
            typer.echo(f"exported {r['id']} ({r['name']}) -> {r['dir']}")
        typer.echo(f"{len(rows)} task(s) exported")


@tasks_app.command("ls")
def tasks_ls(
    status: Annotated[Optional[str], typer.Option(help="Filter by status.")] = None,
    domain: Annotated[Optional[str], typer.Option(help="Filter by domain.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List tasks in the bank."""
    from environments.bank import list_tasks

    rows = list_tasks(status=status, domain=domain)
    if json_out:
        echo_json(rows)
        return
    table = Table("id", "domain", "purpose", "status", "dir")
    for r in rows:
        table.add_row(r["id"], r["domain"] or "", r["purpose"], r["status"], r["dir"])
    console.print(table)
    console.print(f"{len(rows)} task(s)")


@tasks_app.command("show")
def tasks_show(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show one task: its row, checks, and instruction."""
    from environments.bank import show_task

    info = show_task(task_id)
    if info is None:
        typer.echo(f"error: no task {task_id!r} (see `openforge tasks ls`)", err=True)
        raise typer.Exit(1)
    if json_out:
        echo_json(info)
        return
    for key in ("id", "status", "domain", "category", "purpose", "difficulty", "dir", "content_sha", "pass_rate", "error"):
        console.print(f"[bold]{key:12}[/] {info.get(key)}")
    for check in info["checks"]:
        console.print(f"  check {check['kind']:8} passed={check['passed']} reward={check['reward']}")
    console.print("\n" + (info.get("instruction") or ""))


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.add_typer(db_app, name="db")
    app.add_typer(tasks_app, name="tasks")
