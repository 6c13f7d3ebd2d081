"""``forum.test``: a discussion forum — boards, threads with posts, reply and new-thread forms.

Fixture: ``{"user": {"name"}, "boards": [{"id", "name", "description"}], "threads":
[{"id", "board", "title", "author", "posts": [{"id", "author", "body"}]}]}``. The signed-in
user's new threads and replies are appended with ``author`` = the user's name; events:
``reply_posted``, ``thread_created``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from environments.browser.sites.base import SiteStore, esc, form_data, redirect
from environments.browser.sites.base import page as frame

TITLE = "Tinkerers' Forum"
BRAND = "#6b3fa0"
NAV = [("Boards", "/"), ("New thread", "/new")]


def default_fixture() -> dict[str, Any]:
    return {"user": {"name": "alex_d"},
            "boards": [{"id": "general", "name": "General", "description": "Anything goes."}],
            "threads": [{"id": "t1", "board": "general", "title": "Welcome!", "author": "mod",
                         "posts": [{"id": "p1", "author": "mod", "body": "Say hello here."}]}]}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return frame(title, body, brand=BRAND, site_title=TITLE, nav=NAV, status=status)


def _user(store: SiteStore) -> str:
    return str(store.data.get("user", {}).get("name", "guest"))


def routes(store: SiteStore) -> list[Route]:
    def threads_of(board: str) -> list[dict[str, Any]]:
        return [t for t in store.collection("threads") if t.get("board") == board]

    async def home(request: Request) -> Response:
        cards = "".join(
            f'<div class="card"><a href="/b/{esc(b["id"])}" data-board="{esc(b["id"])}"><b>{esc(b["name"])}</b></a> '
            f'<span class="muted">— {esc(b.get("description", ""))} ({len(threads_of(b["id"]))} threads)</span></div>'
            for b in store.collection("boards"))
        return _page("Boards", f'<p class="muted">Signed in as {esc(_user(store))}</p><h1>Boards</h1>{cards}')

    async def board(request: Request) -> Response:
        b = store.find("boards", request.path_params["bid"])
        if b is None:
            return _page("Not found", '<div class="error">Board not found.</div>', status=404)
        rows = "".join(
            f'<tr><td><a href="/t/{esc(t["id"])}" data-thread="{esc(t["id"])}">{esc(t["title"])}</a></td>'
            f'<td>{esc(t.get("author", ""))}</td><td>{len(t.get("posts", []))}</td></tr>' for t in threads_of(b["id"]))
        return _page(b["name"], f'<h1>{esc(b["name"])}</h1><p><a class="button" href="/new?board={esc(b["id"])}">New thread</a></p>'
                                f'<table><tr><th>Thread</th><th>Started by</th><th>Posts</th></tr>{rows}</table>')

    def thread_html(t: dict[str, Any], error: str = "", draft: str = "") -> str:
        posts = "".join(f'<div class="card post"><b>{esc(p.get("author", ""))}</b><div style="white-space:pre-wrap">'
                        f'{esc(p.get("body", ""))}</div></div>' for p in t.get("posts", []))
        err = f'<div class="error">{esc(error)}</div>' if error else ""
        return (f'<h1>{esc(t["title"])}</h1>{posts}{err}<form method="post" action="/t/{esc(t["id"])}/reply" class="card">'
                f'<label for="body">Your reply</label><textarea id="body" name="body">{esc(draft)}</textarea>'
                f'<p><button type="submit" id="post-reply">Post reply</button></p></form>')

    async def thread(request: Request) -> Response:
        t = store.find("threads", request.path_params["tid"])
        if t is None:
            return _page("Not found", '<div class="error">Thread not found.</div>', status=404)
        return _page(t["title"], thread_html(t))

    async def reply(request: Request) -> Response:
        t = store.find("threads", request.path_params["tid"])
        if t is None:
            return _page("Not found", '<div class="error">Thread not found.</div>', status=404)
        body = (await form_data(request)).get("body", "")
        if len(body) < 2:
            return _page(t["title"], thread_html(t, "A reply needs some text."), status=422)
        posts = t.setdefault("posts", [])
        pid = f"{t['id']}-r{len(posts) + 1}"
        posts.append({"id": pid, "author": _user(store), "body": body})
        store.record("reply_posted", thread_id=t["id"], post_id=pid)
        return redirect(f"/t/{t['id']}")

    def new_form(error: str = "", v: dict[str, str] | None = None) -> str:
        v = v or {}
        radios = "".join(
            f'<label><input type="radio" name="board" value="{esc(b["id"])}" id="board-{esc(b["id"])}"'
            f'{" checked" if v.get("board") == b["id"] else ""}> {esc(b["name"])}</label>' for b in store.collection("boards"))
        err = f'<div class="error">{esc(error)}</div>' if error else ""
        return (f'{err}<h1>Start a new thread</h1><form method="post" action="/new" class="card" style="max-width:760px">'
                f'<label>Board</label><div class="radio">{radios}</div>'
                f'<label for="title">Title</label><input type="text" id="title" name="title" value="{esc(v.get("title", ""))}">'
                f'<label for="body">Message</label><textarea id="body" name="body">{esc(v.get("body", ""))}</textarea>'
                f'<p><button type="submit" id="create-thread">Create thread</button></p></form>')

    async def new(request: Request) -> Response:
        return _page("New thread", new_form(v={"board": request.query_params.get("board", "")}))

    async def create(request: Request) -> Response:
        form = await form_data(request)
        problem = ("Choose a board." if store.find("boards", form.get("board", "")) is None
                   else "The title is too short." if len(form.get("title", "")) < 3
                   else "The message is too short." if len(form.get("body", "")) < 2 else "")
        if problem:
            return _page("New thread", new_form(problem, form), status=422)
        tid = store.new_id("t", "threads")
        store.collection("threads").append({"id": tid, "board": form["board"], "title": form["title"], "author": _user(store),
                                            "posts": [{"id": f"{tid}-p1", "author": _user(store), "body": form["body"]}]})
        store.record("thread_created", thread_id=tid, board=form["board"])
        return redirect(f"/t/{tid}")

    return [Route("/", home), Route("/b/{bid}", board), Route("/t/{tid}", thread),
            Route("/t/{tid}/reply", reply, methods=["POST"]), Route("/new", new), Route("/new", create, methods=["POST"])]
