"""The ``notes`` mock service: notes and a todo list."""

from __future__ import annotations

from pydantic import Field

from environments.claw.core import (
    Args, Collection, IsoDate, ServiceSpec, Store, StrList, bad_request, joined, rank,
)

SPEC = ServiceSpec(
    "notes",
    "Personal notes and a todo list.",
    {
        "notes": Collection(prefix="n", defaults={"title": "", "body": "", "tags": []}, required=("title",)),
        "todos": Collection(prefix="td", defaults={"title": "", "done": False, "due": None, "notes": ""}, required=("title",)),
    },
)


class ListArgs(Args):
    query: str | None = Field(None, description="Keywords matched against title, body and tags.")
    tag: str | None = Field(None, description="Only notes with this tag.")


@SPEC.action("list", ListArgs, "List notes (id, title, tags), optionally filtered.")
def list_notes(store: Store, a: ListArgs) -> dict:
    notes = store.items("notes")
    if a.tag:
        notes = [n for n in notes if a.tag.lower() in (t.lower() for t in n.get("tags", []))]
    notes = rank(a.query, notes, lambda n: joined(n, "title", "body", "tags"))
    return {"notes": [{"id": n["id"], "title": n["title"], "tags": n.get("tags", [])} for n in notes]}


SPEC.get_action("get", collection="notes", kind="note", id_description="Note id.",
                description="Read one note.")


class CreateArgs(Args):
    title: str = Field(description="Title.", min_length=1)
    body: str = Field("", description="Text.")
    tags: StrList = Field(default_factory=list, description="Tags.")


@SPEC.action("create", CreateArgs, "Create a note.")
def create(store: Store, a: CreateArgs) -> dict:
    return {"note": store.insert("notes", a.model_dump())}


class UpdateArgs(Args):
    id: str = Field(description="Note id.")
    title: str | None = Field(None, description="New title.")
    body: str | None = Field(None, description="Replace the text.")
    append: str | None = Field(None, description="Text appended to the body on a new line.")
    tags: StrList | None = Field(None, description="Replace the tags.")


@SPEC.action("update", UpdateArgs, "Change a note (replace title/body/tags or append text).")
def update(store: Store, a: UpdateArgs) -> dict:
    note = store.get("notes", a.id, "note")
    patch = a.model_dump(include={"title", "body", "tags"}, exclude_none=True)
    if a.append is not None:
        body = patch.get("body", note.get("body", ""))
        patch["body"] = f"{body}\n{a.append}" if body else a.append
    if not patch:
        raise bad_request("notes_update: give at least one of title, body, append, tags")
    return {"note": store.update("notes", a.id, patch)}


class TodosArgs(Args):
    include_done: bool = Field(False, description="Also list completed todos.")


@SPEC.action("list_todos", TodosArgs, "List todos (open ones by default).")
def list_todos(store: Store, a: TodosArgs) -> dict:
    return {"todos": [dict(t) for t in store.items("todos") if a.include_done or not t.get("done")]}


class AddTodoArgs(Args):
    title: str = Field(description="What to do.", min_length=1)
    due: IsoDate | None = Field(None, description="Due date, YYYY-MM-DD.")
    notes: str = Field("", description="Details.")


@SPEC.action("add_todo", AddTodoArgs, "Add a todo.")
def add_todo(store: Store, a: AddTodoArgs) -> dict:
    return {"todo": store.insert("todos", a.model_dump() | {"done": False})}


class CompleteArgs(Args):
    id: str = Field(description="Todo id.")


@SPEC.action("complete_todo", CompleteArgs, "Mark a todo done.")
def complete_todo(store: Store, a: CompleteArgs) -> dict:
    store.get("todos", a.id, "todo")
    return {"todo": store.update("todos", a.id, {"done": True})}
