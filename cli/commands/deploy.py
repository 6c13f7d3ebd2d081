"""``openforge deploy``: the flows of ``prefect.yaml`` onto the Prefect server at ``PREFECT_API_URL``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

#: The checkout holding ``prefect.yaml``.
REPO_ROOT = Path(__file__).resolve().parents[2]


def deploy_cmd(
    cpu_pool: Annotated[str, typer.Option(help="Work pool of CPU work: synthesis, oracle distillation, evaluation "
                                          "(prefect.yaml: openforge-cpu).")] = "openforge-cpu",
    gpu_pool: Annotated[str, typer.Option(help="Work pool of training: rl-train, sft-train, the pipeline "
                                          "(prefect.yaml: openforge-gpu).")] = "openforge-gpu",
) -> None:
    """Create the work pools and the paid-API limits, then deploy every flow of prefect.yaml
    against the configured Prefect server (PREFECT_API_URL)."""
    from flows.deploy import deploy_all

    for line in deploy_all(REPO_ROOT, cpu_pool, gpu_pool):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("deploy")(deploy_cmd)
