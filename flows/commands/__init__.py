"""CLI command groups. Each module here defines ``register(app: typer.Typer) -> None``;
``flows.cli`` discovers and registers every module of this package."""
