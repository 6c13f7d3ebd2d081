"""``openforge export-atif ROLLOUT_ID... --out DIR``: recorded rollouts as Harbor's ATIF
trajectories (storage/atif.py), one ``<id>.trajectory.json`` each, for Harbor's viewers: the
flow ``export-atif`` (flows/rollout.py) run in-process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli.common import params, run_flow


def export_atif(
    rollout_ids: Annotated[list[str], typer.Argument(help="Rollout ids (see the rollouts table / --json output).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the <id>.trajectory.json files.")] = Path("atif"),
) -> None:
    """Write recorded rollouts as ATIF trajectories (chat-API calls only)."""
    from flows.checks import check_task_db
    from flows.params import ExportAtifParams
    from flows.rollout import export_atif_flow
    from storage.atif import AtifError

    p = params(ExportAtifParams, "export-atif", rollout_ids=rollout_ids, out=os.path.abspath(out))
    check_task_db("export-atif", migrated=True)  # before Prefect starts
    try:
        paths = run_flow(export_atif_flow, p, label="export-atif")
    except AtifError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    for path in paths:
        typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("export-atif")(export_atif)
