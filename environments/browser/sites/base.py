"""What every mock website shares: an in-memory state store loaded from a fixture (with an
event log the verifier reads), form parsing, and the HTML page frame.

A site module (``sites/<name>.py``) exposes ``TITLE``, ``default_fixture() -> dict`` and
``routes(store) -> list[Route]``; :mod:`environments.browser.app` mounts it on its host.
Pages are server-rendered HTML with plain links and POST forms, so every task step is a
click, a typed text or a key press in the browser.
"""

from __future__ import annotations

import copy
import html
import itertools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse


class FixtureError(ValueError):
    """A site fixture is malformed (the message names the site and the field)."""


@dataclass
class SiteStore:
    """One site's state: ``data`` (collections of dicts, as in the fixture) and ``events``."""

    site: str
    fixture: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    _seq: itertools.count = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.reset()

    def reset(self, fixture: dict[str, Any] | None = None) -> None:
        if fixture is not None:
            if not isinstance(fixture, dict):
                raise FixtureError(f"{self.site}: fixture must be a JSON object")
            self.fixture = fixture
        self.data = copy.deepcopy(self.fixture)
        self.events = []
        self._seq = itertools.count(1)

    def collection(self, name: str) -> list[dict[str, Any]]:
        value = self.data.setdefault(name, [])
        if not isinstance(value, list):
            raise FixtureError(f"{self.site}: '{name}' must be a list")
        return value

    def find(self, name: str, ident: str) -> dict[str, Any] | None:
        return next((o for o in self.collection(name) if str(o.get("id")) == ident), None)

    def new_id(self, prefix: str, name: str) -> str:
        taken = {str(o.get("id")) for o in self.collection(name)}
        n = len(taken) + 1
        while f"{prefix}-{n:04d}" in taken:
            n += 1
        return f"{prefix}-{n:04d}"

    def record(self, kind: str, **detail: Any) -> None:
        """Append an event (``{"seq", "kind", ...}``): what the verifier audits."""
        self.events.append({"seq": next(self._seq), "kind": kind, **detail})

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.data)


async def form_data(request: Request) -> dict[str, str]:
    """An urlencoded form body (or query string) as ``{name: first value}``, stripped."""
    raw = (await request.body()).decode("utf-8", errors="replace")
    parsed = parse_qs(raw, keep_blank_values=True)
    return {k: v[0].strip() for k, v in parsed.items()}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def money(value: float) -> str:
    return f"${value:,.2f}"


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


_CSS = """
*{box-sizing:border-box}body{margin:0;font:15px/1.45 "DejaVu Sans",Arial,sans-serif;color:#1d2330;background:#f4f6f9}
header{display:flex;align-items:center;gap:24px;padding:10px 28px;background:var(--brand);color:#fff}
header a{color:#fff;text-decoration:none}header .logo{font-weight:bold;font-size:20px}
header nav{display:flex;gap:18px;flex:1}header form{display:flex;gap:6px}
main{max-width:1180px;margin:18px auto;padding:0 20px}
h1{font-size:24px;margin:6px 0 14px}h2{font-size:19px;margin:16px 0 8px}
.card{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:14px 18px;margin:0 0 12px}
.grid{display:grid;grid-template-columns:repeat(3,1fr);gap:12px}
.row{display:flex;gap:12px;align-items:center}.muted{color:#667085}.price{font-weight:bold;color:#0b6b3a}
input[type=text],input[type=email],input[type=number],textarea{font:inherit;padding:7px 9px;border:1px solid #b8c0cc;border-radius:6px;width:100%}
input[type=number]{width:90px}textarea{min-height:110px}
label{display:block;margin:8px 0 4px;font-weight:bold}.radio label{display:inline;font-weight:normal;margin-right:14px}
button,.button{font:inherit;background:var(--brand);color:#fff;border:0;border-radius:6px;padding:8px 16px;cursor:pointer;text-decoration:none;display:inline-block}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border:1px solid #dde2ea;padding:6px 10px;text-align:left}
.notice{background:#e8f5ec;border:1px solid #9fd3b0;padding:10px 14px;border-radius:6px;margin-bottom:12px}
.error{background:#fdecec;border:1px solid #f1a9a9;padding:10px 14px;border-radius:6px;margin-bottom:12px}
aside{width:250px;flex:none}.layout{display:flex;gap:20px;align-items:flex-start}.content{flex:1;min-width:0}
code,pre{font-family:"DejaVu Sans Mono",monospace;background:#eef1f5;border-radius:4px;padding:1px 4px}
"""


def page(title: str, body: str, *, brand: str, site_title: str, nav: list[tuple[str, str]] | None = None,
         search: str | None = None, query: str = "", status: int = 200) -> HTMLResponse:
    """A full HTML page: header (logo, nav links, optional search box) + ``body``."""
    links = "".join(f'<a href="{esc(href)}">{esc(text)}</a>' for text, href in (nav or []))
    box = ""
    if search is not None:
        box = (f'<form action="{esc(search)}" method="get" role="search">'
               f'<input type="text" name="q" value="{esc(query)}" placeholder="Search" aria-label="Search" style="width:260px">'
               f'<button type="submit">Search</button></form>')
    doc = (f'<!doctype html><html><head><meta charset="utf-8"><title>{esc(title)} - {esc(site_title)}</title>'
           f'<style>:root{{--brand:{brand}}}{_CSS}</style></head><body>'
           f'<header><a class="logo" href="/">{esc(site_title)}</a><nav>{links}</nav>{box}</header>'
           f'<main>{body}</main></body></html>')
    return HTMLResponse(doc, status_code=status)


def words(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if w]


def matches(query: str, *fields: Any) -> int:
    """How many words of ``query`` occur in ``fields`` (0 = no match)."""
    hay = set(words(" ".join(str(f) for f in fields)))
    return sum(1 for w in set(words(query)) if w in hay)
