"""files and notes services: virtual drive and notes/todos."""

from __future__ import annotations

import pytest

FILES = {"files": [
    {"path": "/reports/q1.txt", "content": "Q1 revenue: 1.2M"},
    {"path": "/reports/archive/q4.txt", "content": "Q4 revenue: 1.0M"},
    {"path": "/readme.md", "content": "hello"},
]}
NOTES = {
    "notes": [{"id": "n1", "title": "Ideas", "body": "dark mode", "tags": ["product"]}],
    "todos": [{"id": "td1", "title": "Pay rent", "done": True}, {"id": "td2", "title": "Call Priya"}],
}


@pytest.fixture
def claw(make_claw, fixtures_dir):
    return make_claw("files,notes", fixtures_dir({"files": FILES, "notes": NOTES}))


def test_files(claw):
    root = claw.ok("files_list")
    assert root["folders"] == ["/reports"] and [f["path"] for f in root["files"]] == ["/readme.md"]
    rec = claw.ok("files_list", {"dir": "reports", "recursive": True})
    assert [f["path"] for f in rec["files"]] == ["/reports/archive/q4.txt", "/reports/q1.txt"]
    assert claw.ok("files_read", {"path": "reports/../reports/q1.txt"})["content"] == "Q1 revenue: 1.2M"
    assert claw.ok("files_write", {"path": "/out/summary.txt", "content": "sum"}) == {"path": "/out/summary.txt", "created": True, "size": 3}
    assert claw.ok("files_write", {"path": "/out/summary.txt", "content": "sum2"})["created"] is False
    assert claw.err("files_write", {"path": "/out/summary.txt", "content": "x", "overwrite": False}, status=409)["type"] == "conflict"
    assert [f["path"] for f in claw.ok("files_search", {"query": "revenue q4"})["files"]][0] == "/reports/archive/q4.txt"
    assert claw.ok("files_delete", {"path": "/readme.md"}) == {"deleted": "/readme.md"}
    assert claw.err("files_read", {"path": "/readme.md"}, status=404)["type"] == "not_found"
    assert claw.err("files_list", {"dir": "/nowhere"}, status=404)["type"] == "not_found"
    assert "path is empty" in claw.err("files_read", {"path": "  "})["message"]
    assert [(c["op"], c["id"]) for c in claw.changes("files")] == [
        ("create", "/out/summary.txt"), ("update", "/out/summary.txt"), ("delete", "/readme.md")]


def test_notes_and_todos(claw):
    assert [n["id"] for n in claw.ok("notes_list", {"query": "dark"})["notes"]] == ["n1"]
    assert claw.ok("notes_list", {"tag": "other"})["notes"] == []
    n = claw.ok("notes_create", {"title": "Meeting", "body": "agenda", "tags": "work,q1"})["note"]
    assert n["tags"] == ["work", "q1"]
    assert claw.ok("notes_update", {"id": n["id"], "append": "item 2"})["note"]["body"] == "agenda\nitem 2"
    assert claw.ok("notes_get", {"id": "n1"})["note"]["title"] == "Ideas"
    assert [t["id"] for t in claw.ok("notes_list_todos")["todos"]] == ["td2"]
    td = claw.ok("notes_add_todo", {"title": "Send report", "due": "2026-03-05"})["todo"]
    assert td["done"] is False and td["due"] == "2026-03-05"
    assert claw.ok("notes_complete_todo", {"id": "td2"})["todo"]["done"] is True
    assert [t["id"] for t in claw.ok("notes_list_todos", {"include_done": True})["todos"]] == ["td1", "td2", td["id"]]
    assert "date like" in claw.err("notes_add_todo", {"title": "x", "due": "someday"})["message"]
    assert "at least one of" in claw.err("notes_update", {"id": "n1"})["message"]
