"""``openforge export-atif ROLLOUT_ID... --out DIR``: recorded rollouts as Harbor's ATIF
trajectories (storage/atif.py), one ``<id>.trajectory.json`` each, for Harbor's viewers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def export_atif(
    rollout_ids: Annotated[list[str], typer.Argument(help="Rollout ids (see the rollouts table / --json output).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the <id>.trajectory.json files.")] = Path("atif"),
) -> None:
    """Write recorded rollouts as ATIF trajectories (chat-API calls only)."""
    from openforge.settings import get_settings
    from storage.atif import AtifError
    from storage.atif import export_atif as export
    from storage.db import make_engine

    engine = make_engine(get_settings().db_url)
    try:
        paths = export(engine, rollout_ids, out)
    except AtifError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    for path in paths:
        typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("export-atif")(export_atif)
