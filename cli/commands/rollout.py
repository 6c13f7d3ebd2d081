"""``openforge rollout TASK_DIR --harness NAME``: one rollout in a sandbox (DESIGN §10).

With ``--engine``, the rollout's generation budget is the preset's ``[rollout]``
``max_tokens`` (per call) and ``max_total_tokens`` (per rollout), each overridable by its
flag; the proxy applies it to every call whatever the harness sends.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Annotated

import typer


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
    from environments.harnesses.registry import get_harness
    from environments.taskdir import TaskDirError
    from openforge.presets import load_preset
    from training.orchestrator.backend import SandboxError
    from training.orchestrator.single import rollout_once
    from training.proxy.budget import GenerationBudget

    get_harness(harness)  # an unknown name is a user error (cli/errors.py), not a failed rollout
    try:
        options = json.loads(harness_options) if harness_options else None
        if options is not None and not isinstance(options, dict):
            raise ValueError("expected a JSON object")
    except ValueError as exc:
        raise typer.BadParameter(f"--harness-options {harness_options!r}: {exc}") from None
    caps = load_preset(preset).rollout  # a PresetError is one line (cli/errors.py)
    budget = GenerationBudget(max_tokens=max_tokens or caps.max_tokens,
                              max_total_tokens=max_total_tokens or caps.max_total_tokens)
    async def main() -> dict:
        # SIGTERM cancels like Ctrl-C does: the sandbox is killed and removed before exit.
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        return await rollout_once(task_dir, harness, backend=backend, engine=engine, timeout=timeout,
                                  model=model, harness_options=options, budget=budget)

    try:
        doc = asyncio.run(main())
    except TaskDirError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except SandboxError as exc:
        typer.echo(f"backend {backend}: {exc}", err=True)
        raise typer.Exit(1) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo("interrupted: sandbox cleaned up", err=True)
        raise typer.Exit(130) from None
    if json_out:
        sys.stdout.write(json.dumps(doc) + "\n")
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
