"""The ``openforge`` command line (DESIGN §10): the Typer app and its global options.

Every command has ``--help``; ``--json`` prints one JSON document on stdout. Commands live in
``cli/commands/<name>.py`` and are registered here. A user error is one line on stderr and
exit 2 (``cli/errors.py``); ``openforge --debug ...`` shows tracebacks.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Annotated

import typer

import cli.commands
from cli.common import prefect_env
from cli.errors import UserErrorGroup
from openforge.logs import configure_logging
from openforge.settings import get_settings

app = typer.Typer(
    cls=UserErrorGroup,
    name="openforge",
    help="Train agents end-to-end inside their real harnesses.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False,
    debug: Annotated[bool, typer.Option("--debug", envvar="OPENFORGE_DEBUG",
                                        help="Show Python tracebacks instead of one-line errors.")] = False,
) -> None:
    settings = get_settings()
    configure_logging("INFO" if verbose else settings.log_level, settings.log_json)
    # Quiet by default: no per-load progress bars or advisory warnings from the ML stack.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    prefect_env(debug)


def _register_command_modules() -> None:
    for module in pkgutil.iter_modules(cli.commands.__path__):
        mod = importlib.import_module(f"cli.commands.{module.name}")
        register = getattr(mod, "register", None)
        if callable(register):
            register(app)


_register_command_modules()


if __name__ == "__main__":  # pragma: no cover
    app()
