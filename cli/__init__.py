"""The ``openforge`` command (DESIGN §2, §10): parses arguments, starts flows, prints results.

The room on top: ``cli → flows → tasks → {synthesis, training} → environments → storage``;
nothing below imports it. A command that does work runs a Prefect flow (the same flow, with the
same parameters, as the deployment in ``prefect.yaml``; the embedded API by default); read-only
commands (``tasks ls``, ``db status``, ...) call plain read-only helpers. ``cli.app`` is the
Typer app, ``cli.errors`` turns user errors into one line, ``cli.progress`` shows progress.
"""
