"""``openforge deploy``: the flows of ``prefect.yaml`` onto the Prefect server at ``PREFECT_API_URL``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

#: The checkout holding ``prefect.yaml``.
REPO_ROOT = Path(__file__).resolve().parents[2]


def deploy_cmd(
    pool: Annotated[str, typer.Option(help="Process work pool name (prefect.yaml uses openforge-process).")] = "openforge-process",
) -> None:
    """Create the work pool and concurrency limits, then `prefect --no-prompt deploy --all`
    against the configured Prefect server (PREFECT_API_URL)."""
    from flows.deploy import deploy_all

    for line in deploy_all(REPO_ROOT, pool):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("deploy")(deploy_cmd)
