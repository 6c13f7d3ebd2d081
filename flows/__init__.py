"""Flows room: Prefect ``@flow``s (thin: each is a list of steps calling plain functions)
run by deployments and, in-process on the embedded API, by the ``openforge`` CLI (``cli/``)."""
