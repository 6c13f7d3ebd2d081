"""The ``kb`` mock service: knowledge-base articles (search, get, create)."""

from __future__ import annotations

from pydantic import Field

from environments.claw.core import Args, Collection, ServiceSpec, Store, StrList, joined, rank

SPEC = ServiceSpec(
    "kb",
    "A knowledge base of help articles: search them and read one in full.",
    {
        "articles": Collection(
            prefix="KB",
            defaults={"title": "", "body": "", "tags": [], "category": ""},
            required=("title", "body"),
        )
    },
)


class SearchArgs(Args):
    query: str = Field(description="Keywords or a question.", min_length=1)
    limit: int = Field(5, ge=1, le=50, description="Maximum number of results.")


@SPEC.action("search", SearchArgs, "Search articles; returns id, title and a snippet, best match first.")
def search(store: Store, a: SearchArgs) -> dict:
    found = rank(a.query, store.items("articles"), lambda x: joined(x, "title", "tags", "category", "body"))
    return {
        "articles": [
            {"id": x["id"], "title": x["title"], "category": x.get("category", ""),
             "snippet": " ".join(str(x.get("body", "")).split())[:160]}
            for x in found[: a.limit]
        ]
    }


SPEC.get_action("get_article", collection="articles", kind="article", id_description="Article id, e.g. KB-118.",
                description="Read one article in full.")


class CreateArgs(Args):
    title: str = Field(description="Article title.", min_length=1)
    body: str = Field(description="Article text.", min_length=1)
    tags: StrList = Field(default_factory=list, description="Tags.")
    category: str = Field("", description="Category.")


@SPEC.action("create_article", CreateArgs, "Write a new article.")
def create_article(store: Store, a: CreateArgs) -> dict:
    return {"article": store.insert("articles", a.model_dump())}
