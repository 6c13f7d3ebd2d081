"""CLI command groups. Each module here defines ``register(app: typer.Typer) -> None``;
``cli.app`` discovers and registers every module of this package."""
