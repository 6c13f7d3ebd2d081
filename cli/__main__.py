"""``python -m cli ...``: the ``openforge`` command without the installed entry point."""

from cli.app import app

app()
