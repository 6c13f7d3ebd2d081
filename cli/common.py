"""What every command shares: JSON output, ``--set`` parsing, typed flow parameters from
options, the Prefect environment of an in-process flow run, and running a flow."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError

P = TypeVar("P", bound=BaseModel)


def echo_json(document: object) -> None:
    """One JSON document on stdout (DESIGN §10)."""
    sys.stdout.write(json.dumps(document, default=str) + "\n")


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` (repeatable) → dotted preset overrides; values parse as JSON when they can."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--set {item!r}: expected KEY=VALUE, e.g. train.lr=1e-6")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def params(model: type[P], command: str, options: Mapping[str, str] | None = None, /, **values: Any) -> P:
    """The flow's typed parameters from the command's options. A value the flow refuses is a user
    error naming the option and the value (``options`` maps a field to its flag when they differ)."""
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        flag = (options or {}).get(field) or "--" + field.replace("_", "-")
        raise typer.BadParameter(f"{command}: {flag}: {err['input']!r}: {err['msg']}") from None


def prefect_env(debug: bool) -> None:
    """Settings of an in-process flow run on the embedded API (set by the root command for every
    command): no analytics, a patient start on a loaded box, and Prefect's own log lines only when
    they matter (errors, with their tracebacks, only under ``--debug``: the CLI prints a failed
    run as one line, ``cli.errors``)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING" if debug else "CRITICAL")
    os.environ.setdefault("PREFECT_INTERNAL_LOGGING_LEVEL", "ERROR" if debug else "CRITICAL")


#: What an interrupted flow run says (exit 130).
RESUME_HINT = "interrupted: re-run the same command to resume (finished steps are reused)"


def run_flow(flow: Callable[[P], Awaitable[Any] | Any], parameters: P, *, label: str, quiet: bool = False,
             interrupted: str = RESUME_HINT) -> Any:
    """Run ``flow(parameters)`` in-process as a Prefect flow run (embedded API unless
    ``PREFECT_API_URL`` names a server), showing its progress (``cli.progress``) on stderr.

    Ctrl-C or SIGTERM cancels the run (its tasks clean up: sandboxes, claims) and exits 130 with
    ``interrupted``, whatever Prefect then fails to report (the embedded API gets the signal too).
    An async flow runs in an event loop of its own, cancelled by the signal; a synchronous one
    (``flow.isasync`` false: its steps run event loops of their own) runs in this thread, where the
    signal raises ``KeyboardInterrupt`` into the step in flight."""
    from cli.progress import showing_progress

    signalled: list[int] = []

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, lambda s=signum: (signalled.append(s), me and me.cancel()))
        return await flow(parameters)  # type: ignore[misc]

    with showing_progress(label, quiet=quiet):
        try:
            if getattr(flow, "isasync", True):
                return asyncio.run(main())
            with _interrupting(signalled):
                return flow(parameters)
        except BaseException:
            if not signalled:
                raise
    typer.echo(interrupted, err=True)
    raise typer.Exit(130)


@contextlib.contextmanager
def _interrupting(signalled: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` here (noted in ``signalled``); the previous
    handlers come back after. Outside the main thread (where handlers cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        signalled.append(signum)
        raise KeyboardInterrupt

    previous = {signum: signal.signal(signum, interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
