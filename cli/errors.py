"""User errors of the ``openforge`` CLI: one line on stderr, a non-zero exit, no traceback.

Every command runs inside :class:`UserErrorGroup.invoke`, the one place that turns an
exception into what the user sees:

* a *user error* (a preset, a ``--set`` key or value, a path, a harness, a domain, the
  ``OPENFORGE_DB`` URL or the server behind it, a bad flag raised inside a command):
  ``error: <message naming the input and what to do>`` and exit 2;
* anything else is a bug or a case nobody handled yet: ``error: unexpected <Type>: <message>``
  with a hint to re-run with ``openforge --debug ...``, and exit 1.

With ``--debug`` (or ``OPENFORGE_DEBUG=1``) every exception propagates with its traceback.
User-error classes are matched by qualified name along the exception's MRO, so this module
imports none of the rooms that define them (the CLI starts fast).
"""

from __future__ import annotations

from collections.abc import Callable

import typer
from typer.core import TyperGroup

#: Exit status of a user error (the same as click's usage errors).
USER_ERROR_EXIT = 2
#: Exit status of an unexpected exception.
BUG_EXIT = 1


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _message(exc: BaseException) -> str:
    return _one_line(str(exc)) or type(exc).__name__


def _validation(exc: BaseException) -> str:
    errors = exc.errors()  # type: ignore[attr-defined]
    parts = [f"{'.'.join(str(x) for x in e.get('loc', ())) or exc.title}: {e.get('msg')}"  # type: ignore[attr-defined]
             for e in errors[:3]]
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return _one_line("; ".join(parts) + more)


def _task_db(exc: BaseException) -> str:
    from openforge.settings import get_settings
    from storage.db import hide_password

    orig = getattr(exc, "orig", None) or exc
    reason = _one_line(str(orig)).split(" (Background on this error")[0]
    if "no such table" in reason or ("relation" in reason and "does not exist" in reason):
        return (f"task DB {hide_password(get_settings().db_url)!r} has no tables yet ({reason}): run `openforge init` "
                "(or set OPENFORGE_HOME / OPENFORGE_DB to the data dir you meant)")
    return (f"task DB {hide_password(get_settings().db_url)!r}: {reason}; start the database server or point "
            "OPENFORGE_DB at a reachable one (unset: SQLite under OPENFORGE_HOME)")


def _path(exc: BaseException) -> str:
    filename = getattr(exc, "filename", None)
    reason = getattr(exc, "strerror", None) or _message(exc)
    return f"{filename}: {reason.lower()}" if filename else _message(exc)


def _sandbox(exc: BaseException) -> str:
    return f"sandbox backend: {_message(exc)}"


#: Qualified exception class name → how its one line reads.
USER_ERRORS: dict[str, Callable[[BaseException], str]] = {
    "openforge.presets.PresetError": _message,
    "flows.checks.FlowInputError": _message,
    "training.workflows.compose.CompositionError": _message,
    "synthesis.pools.PoolError": _message,
    "environments.harnesses.registry.UnknownHarness": _message,
    "environments.taskdir.io.TaskDirError": _message,
    "storage.db.DatabaseURLError": _message,
    "storage.atif.AtifError": _message,
    "training.orchestrator.backend.SandboxError": _sandbox,
    "pydantic_core._pydantic_core.ValidationError": _validation,
    "sqlalchemy.exc.OperationalError": _task_db,
    "sqlalchemy.exc.ProgrammingError": _task_db,
    "builtins.FileNotFoundError": _path,
    "builtins.NotADirectoryError": _path,
    "builtins.IsADirectoryError": _path,
    "builtins.PermissionError": _path,
}


def user_error_message(exc: BaseException) -> str | None:
    """The one line for a user error (without the ``error: `` prefix), or None for anything else."""
    for cls in type(exc).__mro__:
        fmt = USER_ERRORS.get(f"{cls.__module__}.{cls.__qualname__}")
        if fmt is not None:
            return fmt(exc)
    return None


def _debug(ctx: typer.Context) -> bool:
    return bool(ctx.find_root().params.get("debug"))


class UserErrorGroup(TyperGroup):
    """The root command group: runs every command and maps its exceptions (module docstring)."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.BadParameter as exc:  # raised inside a command body: one line, not click's usage box
            if _debug(ctx):
                raise
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            text = exc.format_message() if exc.param is not None or exc.param_hint else exc.message
            typer.echo(f"error: {_one_line(text)}{where}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except Exception as exc:
            if _debug(ctx) or _is_click(exc):
                raise
            message = user_error_message(exc)
            if message is not None:
                typer.echo(f"error: {message}", err=True)
                raise typer.Exit(USER_ERROR_EXIT) from None
            typer.echo(f"error: unexpected {type(exc).__name__}: {_message(exc)[:500]} (a bug or an unhandled case: "
                       f"re-run as `openforge --debug ...` for the traceback and report it)", err=True)
            raise typer.Exit(BUG_EXIT) from None


def _is_click(exc: BaseException) -> bool:
    """Click's own exceptions (usage errors, Exit, Abort) keep click's handling."""
    return any(cls.__module__.startswith(("typer._click", "click")) for cls in type(exc).__mro__)
