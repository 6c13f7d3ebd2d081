"""``docs.test``: a product documentation site — a sidebar of pages, full-text search, and
reference pages with sections and option tables (the material of look-up tasks).

Fixture: ``{"product", "pages": [{"slug", "title", "section", "intro", "options":
[{"name", "default", "description"}], "body"}]}``; read-only. Events: ``search``,
``page_view`` (``slug``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from environments.browser.sites.base import SiteStore, esc, matches
from environments.browser.sites.base import page as frame

TITLE = "Docs"
BRAND = "#2d3a4a"


def default_fixture() -> dict[str, Any]:
    return {"product": "Quill", "pages": [
        {"slug": "install", "title": "Installation", "section": "Getting started", "intro": "Install Quill with pip.",
         "options": [], "body": "Run pip install quill."},
        {"slug": "config", "title": "Configuration", "section": "Reference", "intro": "Settings of the Quill server.",
         "options": [{"name": "port", "default": "8080", "description": "TCP port to listen on."}], "body": ""},
    ]}


def routes(store: SiteStore) -> list[Route]:
    def product() -> str:
        return str(store.data.get("product", "Product"))


    def frame_with_sidebar(title: str, content: str, query: str = "", status: int = 200) -> HTMLResponse:
        by_section: dict[str, list[dict[str, Any]]] = {}
        for p in store.collection("pages"):
            by_section.setdefault(p.get("section", "Pages"), []).append(p)
        side = "".join(
            f'<h2 style="font-size:15px">{esc(sec)}</h2>' + "".join(
                f'<div><a href="/page/{esc(p["slug"])}" data-page="{esc(p["slug"])}">{esc(p["title"])}</a></div>' for p in pages)
            for sec, pages in by_section.items())
        body = f'<div class="layout"><aside class="card">{side}</aside><div class="content">{content}</div></div>'
        return frame(title, body, brand=BRAND, site_title=f"{product()} {TITLE}", nav=[("Home", "/")],
                     search="/search", query=query, status=status)

    async def home(request: Request) -> Response:
        return frame_with_sidebar("Home", f'<div class="card"><h1>{esc(product())} documentation</h1>'
                                          f"<p>Browse the pages on the left or search the docs.</p></div>")

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        store.record("search", query=q)
        scored = []
        for p in store.collection("pages"):
            text = [p["title"], p.get("intro", ""), p.get("body", "")] + [
                f"{o['name']} {o.get('description', '')}" for o in p.get("options", [])]
            if (s := matches(q, *text)) > 0:
                scored.append((s, p))
        scored.sort(key=lambda sp: -sp[0])
        hits = "".join(f'<div class="card"><a href="/page/{esc(p["slug"])}" data-page="{esc(p["slug"])}"><b>{esc(p["title"])}</b>'
                       f'</a><div class="muted">{esc(p.get("intro", ""))}</div></div>' for _, p in scored)
        return frame_with_sidebar(f"Search: {q}", f"<h1>Search results for “{esc(q)}”</h1>"
                                  + (hits or '<div class="card">No pages match.</div>'), q)

    async def doc_page(request: Request) -> Response:
        slug = request.path_params["slug"]
        p = next((x for x in store.collection("pages") if x.get("slug") == slug), None)
        if p is None:
            return frame_with_sidebar("Not found", '<div class="error">Page not found.</div>', status=404)
        store.record("page_view", slug=slug)
        opts = "".join(f'<tr><td><code>{esc(o["name"])}</code></td><td><code>{esc(o.get("default", ""))}</code></td>'
                       f'<td>{esc(o.get("description", ""))}</td></tr>' for o in p.get("options", []))
        table = f"<h2>Options</h2><table><tr><th>Option</th><th>Default</th><th>Description</th></tr>{opts}</table>" if opts else ""
        body = "".join(f"<p>{esc(par)}</p>" for par in str(p.get("body", "")).split("\n\n") if par.strip())
        return frame_with_sidebar(p["title"], f'<div class="card"><h1>{esc(p["title"])}</h1><p class="muted">'
                                              f'{esc(p.get("section", ""))}</p><p>{esc(p.get("intro", ""))}</p>{table}{body}</div>')

    return [Route("/", home), Route("/search", search), Route("/page/{slug}", doc_page)]
