"""``openforge proxy serve``: run the recording proxy in front of an engine (DESIGN §10)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

proxy_app = typer.Typer(help="The recording proxy between harnesses and the policy engine.", no_args_is_help=True)


@proxy_app.command("serve")
def serve(
    engine: Annotated[str, typer.Option("--engine", help="OpenAI-compatible URL (vLLM), 'local' or 'local:/path'.")],
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind (0: a free one).")] = 8300,
    admin_key: Annotated[str | None, typer.Option("--admin-key", help="Admin bearer key (default "
                                                     "OPENFORGE_ADMIN_KEY, else a fresh one).")] = None,
    db: Annotated[str | None, typer.Option("--db", help="Task DB URL (default: the settings' DB).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name to ask the engine for.")] = None,
    public_url: Annotated[str | None, typer.Option("--public-url", help="Proxy address sandboxes use.")] = None,
    max_tokens_cap: Annotated[int | None, typer.Option("--max-tokens-cap", min=1, help="Tokens per call, for "
                                                       "rollouts registered without a budget.")] = None,
    max_total_tokens: Annotated[int | None, typer.Option("--max-total-tokens", min=1, help="Generated tokens per "
                                                         "rollout, for rollouts registered without a budget.")] = None,
    max_calls: Annotated[int, typer.Option("--max-calls", help="Model calls allowed per rollout.")] = 2000,
    full_storage: Annotated[bool, typer.Option("--full-storage", help="Store every call in full instead of "
                                               "against the rollout's earlier calls (storage/calls.py).")] = False,
) -> None:
    """Serve the proxy until interrupted; prints one JSON line {url, admin_key} when bound."""
    from training.engines.factory import make_chat_engine
    from training.proxy.app import create_app
    from training.proxy.server import serve_foreground

    kwargs = {"model": model} if model and engine.startswith(("http://", "https://")) else {}
    chat_engine = make_chat_engine(engine, **kwargs)
    app = create_app(chat_engine, db_url=db, admin_key=admin_key, public_url=public_url,
                     max_tokens_cap=max_tokens_cap, max_total_tokens=max_total_tokens,
                     max_calls_per_rollout=max_calls, close_engine=True, linear_storage=not full_storage)

    def ready(url: str) -> None:
        sys.stdout.write(json.dumps({"url": url, "admin_key": app.state.admin_key, "engine": engine}) + "\n")
        sys.stdout.flush()

    serve_foreground(app, host=host, port=port, on_ready=ready)


def register(app: typer.Typer) -> None:
    app.add_typer(proxy_app, name="proxy")
