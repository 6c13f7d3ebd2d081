"""Core helpers: search ranking, time parsing, fixture validation, audited changes."""

from __future__ import annotations

import pytest

from environments.claw.core import AuditLog, FixtureError, Store, parse_time, query_words, rank
from environments.claw.services import get_spec, parse_services, UnknownServiceError


def test_rank_counts_words_and_keeps_ties_in_order():
    items = [{"t": "alpha beta"}, {"t": "beta gamma"}, {"t": "delta"}, {"t": "Beta Gamma alpha"}]
    assert rank("gamma alpha", items, lambda x: x["t"]) == [items[3], items[0], items[1]]
    assert rank("the of", items, lambda x: x["t"]) == items  # stopwords only: no filter
    assert rank(None, items, lambda x: x["t"]) == items
    assert query_words("What is INV-2041's total?") == ["inv-2041", "total"]


def test_parse_time():
    assert parse_time("2026-03-04T10:30:00Z").isoformat() == "2026-03-04T10:30:00+00:00"
    assert parse_time("2026-03-04T10:30:00").tzinfo is not None
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        parse_time("next tuesday")


def test_parse_services():
    assert parse_services("kb, gmail,kb") == ["kb", "gmail"]
    assert parse_services("all")[0] == "gmail"
    with pytest.raises(UnknownServiceError, match="no claw services"):
        parse_services(" , ")


def test_fixture_validation_names_the_field():
    spec = get_spec("helpdesk")
    with pytest.raises(FixtureError, match=r"helpdesk.json: tickets\[0\]: missing requester_email"):
        Store(spec, AuditLog(), {"tickets": [{"subject": "x"}]})
    with pytest.raises(FixtureError, match="helpdesk.json: tickets: expected a list"):
        Store(spec, AuditLog(), {"tickets": {"id": 1}})
    with pytest.raises(FixtureError, match="helpdesk.json: now:"):
        Store(spec, AuditLog(), {"now": "soon"})


def test_store_changes_are_audited_with_copies_and_ids_skip_taken():
    audit = AuditLog()
    store = Store(get_spec("notes"), audit, {"notes": [{"id": "n-0001", "title": "taken"}], "extra_key": 5})
    assert store.state["extra_key"] == 5
    event = store.begin_call("create", {"title": "x"})
    created = store.insert("notes", {"title": "x"})
    assert created["id"] == "n-0002"
    created["title"] = "mutated by caller"
    store.update("notes", "n-0002", {"tags": ["a"]})
    store.update("notes", "n-0002", {"tags": ["a"]})  # no-op: no change event
    store.delete("notes", "n-0001")
    store.end_call(event, 200)
    kinds = [(e["kind"], e.get("op")) for e in audit.events]
    assert kinds == [("call", None), ("change", "create"), ("change", "update"), ("change", "delete")]
    assert audit.events[1]["after"]["title"] == "x" and all(e.get("call_seq", 1) == 1 for e in audit.events)
    assert audit.events[0]["ok"] is True
    assert store.now() > store.state["now"]
    store.load({})
    assert audit.for_service("notes") == [] and store.state["notes"] == []
