"""Launch the mock websites: ``python -m environments.browser.serve --services shop,docs
[--host 127.0.0.1] [--port 0] [--fixtures DIR] [--ready-file PATH]``.

The same launch protocol as the claw services (what the runner's ServiceGroup speaks):
``CLAW_READY <url>`` on stderr and ``{"url", "port", "pid"}`` in the ready file once
listening, ``GET /healthz`` answers; bad arguments → exit 2 with one ``error:`` line.
Browsers reach the sites as ``http://<site>.test/`` by mapping ``*.test`` to this port.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path

from environments.claw.serve import serve_app


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m environments.browser.serve")
    p.add_argument("--services", default=os.environ.get("BROWSER_SITES"), help="comma list of sites (env BROWSER_SITES)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--fixtures", default=None, help="dir of <site>.json (default fixtures otherwise)")
    p.add_argument("--ready-file", default=None)
    p.add_argument("--log-level", default="warning")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    ns = _parse(argv)
    logging.basicConfig(level=ns.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    sites = [s.strip() for s in (ns.services or "").split(",") if s.strip()]
    if not sites:
        sys.stderr.write("error: no sites given (--services or BROWSER_SITES)\n")
        return 2
    from environments.browser.app import create_app
    from environments.browser.sites import UnknownSiteError
    from environments.browser.sites.base import FixtureError

    try:
        app = create_app(sites, Path(ns.fixtures) if ns.fixtures else None)
    except (FixtureError, UnknownSiteError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((ns.host, ns.port))
    except OSError as exc:
        sys.stderr.write(f"error: cannot listen on {ns.host}:{ns.port}: {exc.strerror}\n")
        return 2
    sock.listen(128)
    url = f"http://{ns.host}:{sock.getsockname()[1]}"
    asyncio.run(serve_app(app, sock, url, ns.ready_file, ns.log_level))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
