"""One ASGI app hosting any subset of the mock websites, dispatched by Host header
(``shop.test`` → the shop), plus a control plane on any other host:

```
GET  /healthz                 → {"ok": true, "sites": [...]}
GET  /<site>/state            → {"site", "state": {...}, "events": [...]}   (control header)
POST /<site>/reset            body {} → reload the fixture, {"fixture": {...}} → load it  (control header)
```
State and reset need the ``X-OpenForge-Control: 1`` header, which a browser navigating to
the server's address cannot send: the agent cannot read the verifier's view or undo its work.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Host, Route, Router

from environments.browser.names import CONTROL_HEADER, site_host
from environments.browser.sites import get_site
from environments.browser.sites.base import FixtureError, SiteStore

log = logging.getLogger(__name__)


def load_fixture(site: str, fixtures: Path | None) -> dict[str, Any]:
    """``<fixtures>/<site>.json`` if present, else the site's built-in default fixture."""
    if fixtures is not None:
        path = fixtures / f"{site}.json" if fixtures.is_dir() else fixtures
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise FixtureError(f"{path}: not valid JSON ({exc})") from None
            data = data.get(site, data) if path == fixtures else data
            if not isinstance(data, dict):
                raise FixtureError(f"{path}: the {site} fixture must be a JSON object")
            return data
    return get_site(site).default_fixture()


def create_app(sites: list[str], fixtures: Path | None = None) -> Starlette:
    """The app serving ``sites`` (fixtures from a dir of ``<site>.json``)."""
    stores = {name: SiteStore(name, load_fixture(name, fixtures)) for name in sites}
    hosts = [Host(site_host(name), Router(routes=get_site(name).routes(stores[name]))) for name in sites]

    def control(request: Request) -> SiteStore | JSONResponse:
        name = request.path_params["site"]
        if request.headers.get(CONTROL_HEADER) != "1":
            return JSONResponse({"error": f"missing {CONTROL_HEADER} header"}, status_code=403)
        if name not in stores:
            return JSONResponse({"error": f"no site {name!r} here (hosted: {', '.join(stores)})"}, status_code=404)
        return stores[name]

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "sites": list(stores)})

    async def state(request: Request) -> JSONResponse:
        store = control(request)
        if isinstance(store, JSONResponse):
            return store
        return JSONResponse({"site": store.site, "state": store.snapshot(), "events": list(store.events)})

    async def reset(request: Request) -> JSONResponse:
        store = control(request)
        if isinstance(store, JSONResponse):
            return store
        try:
            body = json.loads((await request.body()) or b"{}")
            store.reset(body.get("fixture") if isinstance(body, dict) else None)
        except (ValueError, FixtureError) as exc:
            return JSONResponse({"error": f"reset {store.site}: {exc}"}, status_code=422)
        return JSONResponse({"ok": True, "site": store.site})

    async def unknown_host(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"This site can't be reached: {request.url.hostname}", status_code=404)

    control_routes = [Route("/healthz", healthz), Route("/{site}/state", state),
                      Route("/{site}/reset", reset, methods=["POST"])]
    return Starlette(routes=[*hosts, *control_routes, Route("/{path:path}", unknown_host)])
