"""calendar service: list/get/create/update/delete events and free slots; bad input."""

from __future__ import annotations

import pytest

FIX = {
    "events": [
        {"id": "e1", "title": "Standup", "start": "2026-03-04T09:00:00Z", "end": "2026-03-04T10:00:00Z"},
        {"id": "e2", "title": "1:1", "start": "2026-03-04T10:00:00+00:00", "end": "2026-03-04T10:30:00Z",
         "attendees": ["sam@acme.test"]},
        {"id": "e3", "title": "Vendor call", "start": "2026-03-04T11:00:00Z", "end": "2026-03-04T12:00:00Z"},
        {"id": "e0", "title": "Yesterday", "start": "2026-03-03T09:00:00Z", "end": "2026-03-03T10:00:00Z"},
    ]
}


@pytest.fixture
def cal(make_claw, fixtures_dir):
    return make_claw("calendar", fixtures_dir({"calendar": FIX}))


def test_list_window_sorted_and_query(cal):
    ids = [e["id"] for e in cal.ok("calendar_list_events", {"start": "2026-03-04T00:00:00Z", "end": "2026-03-05T00:00:00Z"})["events"]]
    assert ids == ["e1", "e2", "e3"]
    assert [e["id"] for e in cal.ok("calendar_list_events")["events"]] == ["e0", "e1", "e2", "e3"]
    assert [e["id"] for e in cal.ok("calendar_list_events", {"query": "sam"})["events"]] == ["e2"]


def test_free_slots_skip_busy_time(cal):
    slots = cal.ok("calendar_find_free_slots", {"date": "2026-03-04", "duration_minutes": 30})["slots"]
    assert slots[0] == {"start": "2026-03-04T10:30:00Z", "end": "2026-03-04T11:00:00Z"}
    assert {"start": "2026-03-04T11:00:00Z", "end": "2026-03-04T11:30:00Z"} not in slots
    assert slots[-1]["end"] == "2026-03-04T17:00:00Z"
    long = cal.ok("calendar_find_free_slots", {"date": "2026-03-04", "duration_minutes": 60})["slots"]
    assert long[0]["start"] == "2026-03-04T12:00:00Z"
    assert "day_end_hour" in cal.err("calendar_find_free_slots", {"date": "2026-03-04", "day_start_hour": 10, "day_end_hour": 9})["message"]


def test_create_normalizes_times_and_reports_conflicts(cal):
    res = cal.ok("calendar_create_event", {"title": "Sync", "start": "2026-03-04T09:30:00+00:00",
                                           "end": "2026-03-04T10:15:00", "attendees": "a@b.test"})
    assert res["event"]["start"] == "2026-03-04T09:30:00Z" and res["event"]["end"] == "2026-03-04T10:15:00Z"
    assert res["event"]["attendees"] == ["a@b.test"] and res["conflicts_with"] == ["e1", "e2"]


def test_update_delete_and_changes(cal):
    ev = cal.ok("calendar_update_event", {"id": "e3", "start": "2026-03-04T13:00:00Z", "end": "2026-03-04T14:00:00Z"})["event"]
    assert ev["start"] == "2026-03-04T13:00:00Z" and ev["title"] == "Vendor call"
    assert cal.ok("calendar_delete_event", {"id": "e0"}) == {"deleted": "e0"}
    assert [(c["op"], c["id"]) for c in cal.changes("calendar")] == [("update", "e3"), ("delete", "e0")]
    assert cal.changes("calendar")[1]["after"] is None
    assert cal.err("calendar_get_event", {"id": "e0"}, status=404)["type"] == "not_found"


def test_bad_times(cal):
    err = cal.err("calendar_create_event", {"title": "x", "start": "tomorrow 10am", "end": "2026-03-04T10:00:00Z"})
    assert "not an ISO 8601 time" in err["message"] and "'start'" in err["message"]
    err = cal.err("calendar_create_event", {"title": "x", "start": "2026-03-04T10:00:00Z", "end": "2026-03-04T09:00:00Z"})
    assert "must be after" in err["message"]
    assert "must be after" in cal.err("calendar_update_event", {"id": "e1", "end": "2026-03-04T08:00:00Z"})["message"]
    assert "at least one field" in cal.err("calendar_update_event", {"id": "e1"})["message"]
    assert "date like" in cal.err("calendar_find_free_slots", {"date": "March 4"})["message"]
