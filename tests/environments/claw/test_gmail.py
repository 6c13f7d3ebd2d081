"""gmail service: search, read, send, reply, forward, label; audit; reset; bad input."""

from __future__ import annotations

import pytest

ME = "me@acme.test"
FIX = {
    "gmail": {
        "user": {"email": ME, "name": "Me"},
        "messages": [
            {"id": "m1", "thread_id": "t1", "from": "dana@client.test", "to": [ME], "cc": ["boss@acme.test"],
             "subject": "Invoice INV-9 question", "body": "What is the total of INV-9?", "date": "2026-03-01T08:00:00Z"},
            {"id": "m2", "from": "billing@acme.test", "to": [ME], "subject": "INV-9 issued",
             "body": "Total: 100.00", "read": True, "labels": ["INBOX", "Finance"]},
            {"id": "m3", "from": "news@x.test", "to": [ME], "subject": "Weekly news", "body": "nothing"},
        ],
    }
}


@pytest.fixture
def gm(make_claw, fixtures_dir):
    return make_claw("gmail", fixtures_dir(FIX))


def test_search_ranks_and_filters(gm):
    res = gm.ok("gmail_search", {"query": "INV-9 total"})
    assert [m["id"] for m in res["messages"]][:2] == ["m1", "m2"]
    assert "snippet" in res["messages"][0] and "body" not in res["messages"][0]
    assert [m["id"] for m in gm.ok("gmail_search", {"label": "finance"})["messages"]] == ["m2"]
    assert [m["id"] for m in gm.ok("gmail_search", {"unread_only": True})["messages"]] == ["m1", "m3"]
    assert [m["id"] for m in gm.ok("gmail_search", {"sender": "news@"})["messages"]] == ["m3"]
    assert gm.ok("gmail_search", {"query": "zebra"})["messages"] == []
    assert len(gm.ok("gmail_search", {"limit": 1})["messages"]) == 1


def test_read_marks_read_and_audits_change(gm):
    msg = gm.ok("gmail_read", {"id": "m1"})["message"]
    assert msg["body"] == "What is the total of INV-9?" and msg["read"] is True
    changes = gm.changes("gmail")
    assert [(c["op"], c["id"], c["before"]["read"], c["after"]["read"]) for c in changes] == [("update", "m1", False, True)]
    gm.ok("gmail_read", {"id": "m1"})  # already read: no new change
    assert len(gm.changes("gmail")) == 1


def test_send_reply_forward(gm):
    sent = gm.ok("gmail_send", {"to": "x@y.test, z@y.test", "subject": "Hi", "body": "Hello"})["sent"]
    assert sent["to"] == ["x@y.test", "z@y.test"] and sent["labels"] == ["SENT"] and sent["from"] == ME
    rep = gm.ok("gmail_reply", {"id": "m1", "body": "It is 100.00", "reply_all": True})["sent"]
    assert rep["subject"] == "Re: Invoice INV-9 question" and rep["to"] == ["dana@client.test"]
    assert rep["thread_id"] == "t1" and rep["in_reply_to"] == "m1"
    msgs = {m["id"]: m for m in gm.state("gmail")["messages"]}
    assert msgs[rep["id"]]["cc"] == ["boss@acme.test"]
    fwd = gm.ok("gmail_forward", {"id": "m2", "to": ["acct@acme.test"], "note": "FYI"})["sent"]
    body = gm.state("gmail")["messages"][-1]["body"]
    assert fwd["subject"] == "Fwd: INV-9 issued" and body.startswith("FYI") and "Total: 100.00" in body
    created = [c["id"] for c in gm.changes("gmail") if c["op"] == "create"]
    assert created == [sent["id"], rep["id"], fwd["id"]] and len(set(created)) == 3


def test_label_add_remove(gm):
    assert gm.ok("gmail_label", {"id": "m1", "add": ["Billing"], "remove": ["INBOX"]})["labels"] == ["Billing"]
    assert gm.ok("gmail_label", {"id": "m1", "add": "billing"})["labels"] == ["Billing"]
    err = gm.err("gmail_label", {"id": "m1"})
    assert "at least one label" in err["message"]


def test_errors_are_helpful(gm):
    err = gm.err("gmail_read", {"id": "nope"}, status=404)
    assert err["type"] == "not_found" and "m1" in err["hint"]
    err = gm.err("gmail_send", {"to": ["not-an-email"], "subject": "s"})
    assert "'to'" in err["message"] and "'body': required" in err["message"] and "arguments:" in err["hint"]
    err = gm.err("gmail_send", {"to": [], "subject": "s", "body": "b"})
    assert "'to'" in err["message"]
    err = gm.err("gmail_search", {"limit": 0})
    assert "limit" in err["message"]
    err = gm.err("gmail_search", {"querry": "x"})
    assert "'querry': unknown argument" in err["message"]


def test_audit_orders_calls_then_changes_and_reset_restores(gm):
    gm.ok("gmail_send", {"to": ["a@b.test"], "subject": "S", "body": "B"})
    gm.err("gmail_read", {"id": "missing"}, status=404)
    events = gm.audit("gmail")
    assert [(e["kind"], e.get("tool"), e.get("ok")) for e in events] == [
        ("call", "gmail_send", True), ("change", None, None), ("call", "gmail_read", False)]
    assert events[1]["call_seq"] == events[0]["seq"] and events[2]["status"] == 404
    assert [e["seq"] for e in gm.http.get("/gmail/audit", params={"since": events[0]["seq"]}).json()["events"]] == [
        events[1]["seq"], events[2]["seq"]]
    assert gm.http.post("/gmail/reset").json() == {"ok": True, "service": "gmail"}
    assert gm.audit("gmail") == []
    assert [m["id"] for m in gm.state("gmail")["messages"]] == ["m1", "m2", "m3"]
    # reset with inline fixtures replaces the data
    gm.http.post("/gmail/reset", json={"fixtures": {"messages": [{"id": "x", "from": "a@b", "subject": "s"}]}})
    assert [m["id"] for m in gm.state("gmail")["messages"]] == ["x"]
    bad = gm.http.post("/gmail/reset", json={"fixtures": {"messages": [{"id": "x"}]}})
    assert bad.status_code == 422 and "missing from, subject" in bad.json()["error"]["message"]
