"""contacts and helpdesk services: actions, conflicts, enums, audit of comments."""

from __future__ import annotations

import pytest

CONTACTS = {"contacts": [
    {"id": "c1", "name": "Priya Raman", "email": "priya@quill.test", "company": "Quillworks"},
    {"id": "c2", "name": "Lena Vogel", "email": "lena@soft.test", "company": "Quillsoft"},
]}
HELPDESK = {"tickets": [
    {"id": "T-1", "subject": "Export broken", "requester_name": "Omar", "requester_email": "omar@hp.test",
     "comments": [{"author": "omar@hp.test", "body": "CSV export does nothing", "public": True}]},
    {"id": "T-2", "subject": "Billing sync fails", "requester_name": "Priya Raman",
     "requester_email": "priya@quill.test", "priority": "high", "tags": ["billing"]},
    {"id": "T-3", "subject": "Dark mode", "requester_email": "lena@soft.test", "status": "pending"},
]}


@pytest.fixture
def claw(make_claw, fixtures_dir):
    return make_claw("contacts,helpdesk", fixtures_dir({"contacts": CONTACTS, "helpdesk": HELPDESK}))


def test_contacts(claw):
    assert [c["id"] for c in claw.ok("contacts_search", {"query": "quillworks"})["contacts"]] == ["c1"]
    assert [c["id"] for c in claw.ok("contacts_search", {"query": "quill"})["contacts"]] == ["c1", "c2"]
    assert claw.ok("contacts_get", {"id": "c2"})["contact"]["name"] == "Lena Vogel"
    new = claw.ok("contacts_create", {"name": "Ada", "email": "ada@x.test"})["contact"]
    assert new["id"] == "c-0001" and new["phone"] == ""
    err = claw.err("contacts_create", {"name": "Dup", "email": "PRIYA@quill.test"}, status=409)
    assert err["type"] == "conflict" and "c1" in err["message"]
    assert claw.ok("contacts_update", {"id": "c1", "title": "Lead"})["contact"]["title"] == "Lead"
    assert "at least one field" in claw.err("contacts_update", {"id": "c1"})["message"]
    assert "not an email" in claw.err("contacts_create", {"name": "x", "email": "nobody"})["message"]
    assert "'query'" in claw.err("contacts_search", {"query": ""})["message"]


def test_helpdesk_list_filters(claw):
    ids = lambda r: [t["id"] for t in r["tickets"]]  # noqa: E731
    assert ids(claw.ok("helpdesk_list_tickets")) == ["T-1", "T-2", "T-3"]
    assert ids(claw.ok("helpdesk_list_tickets", {"status": "open"})) == ["T-1", "T-2"]
    assert ids(claw.ok("helpdesk_list_tickets", {"requester": "priya"})) == ["T-2"]
    assert ids(claw.ok("helpdesk_list_tickets", {"tag": "BILLING"})) == ["T-2"]
    assert ids(claw.ok("helpdesk_list_tickets", {"query": "csv"})) == ["T-1"]
    err = claw.err("helpdesk_list_tickets", {"status": "done"})
    assert "'status'" in err["message"] and "'open'" in err["message"]


def test_helpdesk_comment_update_create(claw):
    res = claw.ok("helpdesk_comment", {"id": "T-2", "body": "Looking into it", "public": False})
    assert res["n_comments"] == 1 and res["comment"]["public"] is False
    t = claw.ok("helpdesk_update_ticket", {"id": "T-2", "status": "pending", "add_tags": ["sync"], "remove_tags": "billing"})["ticket"]
    assert t["status"] == "pending" and t["tags"] == ["sync"]
    assert "at least one of" in claw.err("helpdesk_update_ticket", {"id": "T-2"})["message"]
    assert claw.err("helpdesk_comment", {"id": "T-99", "body": "x"}, status=404)["type"] == "not_found"
    new = claw.ok("helpdesk_create_ticket", {"subject": "New", "requester_email": "a@b.test", "body": "help"})["ticket"]
    assert new["status"] == "open" and new["n_comments"] == 1
    changes = claw.changes("helpdesk")
    assert [(c["op"], c["id"]) for c in changes] == [("update", "T-2"), ("update", "T-2"), ("create", new["id"])]
    assert changes[0]["after"]["comments"][-1]["body"] == "Looking into it"
    assert claw.changes("contacts") == []
