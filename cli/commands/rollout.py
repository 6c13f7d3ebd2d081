"""``openforge rollout TASK_DIR --harness NAME``: one rollout in a sandbox (DESIGN §10), the flow
``rollout`` (flows/rollout.py) run in-process with the parameters a deployment would take.

With ``--engine``, the rollout's generation budget is the preset's ``[rollout]``
``max_tokens`` (per call) and ``max_total_tokens`` (per rollout), each overridable by its
flag; the proxy applies it to every call whatever the harness sends.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from cli.common import echo_json, params, run_flow


def rollout(
    task_dir: Annotated[str, typer.Argument(help="Task directory (Harbor layout).")],
    harness: Annotated[str, typer.Option("--harness", help="oracle, noop, react, codex, claude-code, ...")],
    backend: Annotated[str, typer.Option("--backend", help="Sandbox backend: local, docker or kubernetes "
                                                    "(OPENFORGE_K8S_* settings).")] = "local",
    engine: Annotated[str | None, typer.Option("--engine", help="Policy engine: OpenAI-compatible URL or "
                                                  "'local'; a proxy is started in front of it.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Wall-clock seconds for the whole "
                                                     "rollout (default: the task's budgets).")] = None,
    model: Annotated[str, typer.Option("--model", help="Model name the harness asks for.")] = "policy",
    harness_options: Annotated[str | None, typer.Option("--harness-options", help="JSON object of "
                                                           "adapter options.")] = None,
    preset: Annotated[str, typer.Option("--preset", help="Preset whose [rollout] caps bound generation.")] = "local",
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="Tokens per model call "
                                                   "(default: the preset's rollout.max_tokens).")] = None,
    max_total_tokens: Annotated[int | None, typer.Option("--max-total-tokens", min=1, help="Generated tokens "
                                                         "per rollout (default: the preset's).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON line.")] = False,
) -> None:
    """Run one rollout and print its outcome (status, reward, error_kind, n_calls, seconds)."""
    from environments.taskdir import TaskDirError
    from flows.checks import check_harnesses, check_rollout
    from flows.params import RolloutParams
    from flows.rollout import rollout_flow
    from training.orchestrator.backend import SandboxError

    check_harnesses([harness])  # an unknown name is a user error (cli/errors.py), not a failed rollout
    try:
        options = json.loads(harness_options) if harness_options else None
        if options is not None and not isinstance(options, dict):
            raise ValueError("expected a JSON object")
    except ValueError as exc:
        raise typer.BadParameter(f"--harness-options {harness_options!r}: {exc}") from None
    p = params(RolloutParams, "rollout", task_dir=os.path.abspath(task_dir), harness=harness, backend=backend,
               engine=engine, timeout=timeout, model=model, harness_options=options, preset=preset,
               max_tokens=max_tokens, max_total_tokens=max_total_tokens)
    try:
        check_rollout(p)  # the preset (a PresetError is one line) and the task dir, before Prefect starts
        doc = run_flow(rollout_flow, p, label="rollout", quiet=json_out, interrupted="interrupted: sandbox cleaned up")
    except TaskDirError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except SandboxError as exc:
        typer.echo(f"backend {backend}: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_out:
        echo_json(doc)
        return
    reward = "-" if doc["reward"] is None else f"{doc['reward']:g}"
    line = f"{doc['status']} reward={reward} n_calls={doc['n_calls']} seconds={doc['seconds']:.1f}"
    if doc.get("error_kind"):
        line += f" error_kind={doc['error_kind']}"
    typer.echo(line)
    if doc.get("error"):
        typer.echo(f"  {doc['error']}")
    typer.echo(f"  logs: {doc['logs_dir']}  isolation: {doc['isolation']}")
    for note in doc.get("sandbox_notes", []):
        typer.echo(f"  note: {note}")


def register(app: typer.Typer) -> None:
    app.command("rollout")(rollout)
