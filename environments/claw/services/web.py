"""The ``web`` mock service: web_search and web_fetch over a local corpus of pages."""

from __future__ import annotations

from pydantic import Field

from environments.claw.core import Args, Collection, ServiceSpec, Store, joined, not_found, rank

SPEC = ServiceSpec(
    "web",
    "Web search and page fetching (over an offline corpus).",
    {
        "pages": Collection(
            prefix="p",
            defaults={"url": "", "title": "", "content": "", "snippet": None},
            required=("url", "title", "content"),
            id_key="url",
        )
    },
)


def _norm_url(url: str) -> str:
    url = url.strip()
    for prefix in ("https://", "http://"):
        if url.startswith(prefix):
            url = url[len(prefix):]
    return url.rstrip("/").lower()


class SearchArgs(Args):
    query: str = Field(description="Search query.", min_length=1)
    limit: int = Field(5, ge=1, le=20, description="Maximum number of results.")


@SPEC.action("search", SearchArgs, "Search the web; returns url, title and snippet for each hit.")
def search(store: Store, a: SearchArgs) -> dict:
    found = rank(a.query, store.items("pages"), lambda p: joined(p, "title", "url", "content"))
    return {
        "results": [
            {"url": p["url"], "title": p["title"],
             "snippet": p.get("snippet") or " ".join(str(p["content"]).split())[:160]}
            for p in found[: a.limit]
        ]
    }


class FetchArgs(Args):
    url: str = Field(description="URL of the page (from web_search).", min_length=1)


@SPEC.action("fetch", FetchArgs, "Fetch a page's full text.")
def fetch(store: Store, a: FetchArgs) -> dict:
    want = _norm_url(a.url)
    for page in store.items("pages"):
        if _norm_url(page["url"]) == want:
            return {"url": page["url"], "title": page["title"], "content": page["content"]}
    raise not_found("page", a.url, "only pages returned by web_search can be fetched (HTTP 404)")
