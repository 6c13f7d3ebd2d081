"""Launcher: host the selected claw services in one uvicorn process (cheap per rollout).

    python -m environments.claw.serve --services gmail,calendar [--port P] [--host H]
        [--fixtures DIR|FILE] [--ready-file PATH]

Fallbacks: services ← ``CLAW_SERVICES``; port ← ``PORT`` ← ``CLAW_PORT`` ← 8790 (0 = any free
port); fixtures ← ``CLAW_FIXTURES``. Once listening it logs ``CLAW_READY <url>`` on stderr
and, with ``--ready-file``, writes ``{"url", "port", "pid"}`` there (atomically).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import sys
from pathlib import Path

DEFAULT_PORT = 8790
logger = logging.getLogger("environments.claw.serve")


def default_port() -> int:
    for var in ("PORT", "CLAW_PORT"):
        value = os.environ.get(var)
        if value:
            return int(value)
    return DEFAULT_PORT


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m environments.claw.serve", description="Serve claw mock services.")
    p.add_argument("--services", default=os.environ.get("CLAW_SERVICES"), help="comma list or 'all' (env CLAW_SERVICES)")
    p.add_argument("--port", type=int, default=None, help="port (env PORT, CLAW_PORT; default 8790; 0 = free port)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--fixtures", default=os.environ.get("CLAW_FIXTURES"), help="dir of <service>.json or one JSON file (env CLAW_FIXTURES)")
    p.add_argument("--ready-file", default=None, help="write {url, port, pid} here once listening")
    p.add_argument("--log-level", default="warning")
    return p.parse_args(argv)


async def serve_app(app, sock: socket.socket, url: str, ready_file: str | None, log_level: str) -> None:  # noqa: ANN001
    """Serve ``app`` on ``sock``; once listening, print ``CLAW_READY <url>`` and write ``ready_file``.
    Shared by the claw services and the browser-use mock sites (environments/browser/serve.py)."""
    import uvicorn  # noqa: PLC0415 - keep `--help` fast

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        sys.stderr.write(f"CLAW_READY {url}\n")
        sys.stderr.flush()
        if ready_file:
            path = Path(ready_file)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"url": url, "port": sock.getsockname()[1], "pid": os.getpid()}))
            tmp.replace(path)

    task = asyncio.create_task(announce())
    await server.serve(sockets=[sock])
    task.cancel()


def main(argv: list[str] | None = None) -> int:
    ns = _parse(argv)
    logging.basicConfig(level=ns.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if not ns.services:
        sys.stderr.write("error: no services given (--services or CLAW_SERVICES)\n")
        return 2
    try:
        port = ns.port if ns.port is not None else default_port()
    except ValueError:
        sys.stderr.write(f"error: PORT/CLAW_PORT is not an integer: {os.environ.get('PORT') or os.environ.get('CLAW_PORT')!r}\n")
        return 2
    from environments.claw.app import create_app  # noqa: PLC0415
    from environments.claw.core import FixtureError  # noqa: PLC0415
    from environments.claw.services import UnknownServiceError  # noqa: PLC0415

    try:
        app = create_app(ns.services, ns.fixtures)
    except (FixtureError, UnknownServiceError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sock = socket.socket(socket.AF_INET6 if ":" in ns.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((ns.host, port))
    except OSError as exc:
        sys.stderr.write(f"error: cannot listen on {ns.host}:{port}: {exc.strerror}\n")
        return 2
    sock.listen(128)
    sock.set_inheritable(True)
    url = f"http://{ns.host}:{sock.getsockname()[1]}"
    asyncio.run(serve_app(app, sock, url, ns.ready_file, ns.log_level))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
