"""Flows room: Prefect ``@flow``s (thin: each is a list of steps calling plain functions)
and the ``openforge`` CLI that runs the same flows without a server."""
