"""The ``calendar`` mock service: one user's events (list, get, create, update, delete,
find free slots). Times are ISO 8601 in UTC."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pydantic import Field

from environments.claw.core import (
    Args, Collection, EmailList, IsoDate, IsoTime, ServiceSpec, Store, bad_request, format_time,
    joined, parse_time, rank,
)

SPEC = ServiceSpec(
    "calendar",
    "A calendar: list, create, update and delete events, and find free time slots.",
    {
        "events": Collection(
            prefix="e",
            defaults={"title": "", "start": None, "end": None, "attendees": [], "location": "", "description": ""},
            required=("title", "start", "end"),
        )
    },
    extras={"user": {"email": "me@example.test", "timezone": "UTC"}},
)


def _span(event: dict) -> tuple[datetime, datetime]:
    return parse_time(str(event["start"])), parse_time(str(event["end"]))


class ListArgs(Args):
    start: IsoTime | None = Field(None, description="Only events ending after this time (ISO 8601).")
    end: IsoTime | None = Field(None, description="Only events starting before this time (ISO 8601).")
    query: str | None = Field(None, description="Keywords matched against title, description, location, attendees.")
    limit: int = Field(50, ge=1, le=200, description="Maximum number of events.")


@SPEC.action("list_events", ListArgs, "List events in a time window, sorted by start time.")
def list_events(store: Store, a: ListArgs) -> dict:
    events = store.items("events")
    if a.start:
        lo = parse_time(a.start)
        events = [e for e in events if _span(e)[1] > lo]
    if a.end:
        hi = parse_time(a.end)
        events = [e for e in events if _span(e)[0] < hi]
    if a.query:
        events = rank(a.query, events, lambda e: joined(e, "title", "description", "location", "attendees"))
    events = sorted(events, key=lambda e: _span(e)[0])
    return {"events": [dict(e) for e in events[: a.limit]]}


class GetArgs(Args):
    id: str = Field(description="Event id.")


SPEC.get_action("get_event", collection="events", kind="event", args=GetArgs, description="Get one event by id.")


class CreateArgs(Args):
    title: str = Field(description="Event title.", min_length=1)
    start: IsoTime = Field(description="Start time, ISO 8601 (e.g. 2026-03-04T10:30:00Z).")
    end: IsoTime = Field(description="End time, ISO 8601; must be after start.")
    attendees: EmailList = Field(default_factory=list, description="Attendee email addresses (they get invited).")
    location: str = Field("", description="Location or meeting link.")
    description: str = Field("", description="Event description.")


def _check_span(start: str, end: str) -> None:
    if parse_time(end) <= parse_time(start):
        raise bad_request(f"'end' ({end}) must be after 'start' ({start})")


@SPEC.action("create_event", CreateArgs, "Create an event and invite its attendees.")
def create_event(store: Store, a: CreateArgs) -> dict:
    _check_span(a.start, a.end)
    event = store.insert("events", a.model_dump())
    s, e = _span(event)
    conflicts = [x["id"] for x in store.items("events") if x["id"] != event["id"] and _overlaps(x, s, e)]
    return {"event": event, "conflicts_with": conflicts}


def _overlaps(event: dict, start: datetime, end: datetime) -> bool:
    s, e = _span(event)
    return s < end and start < e


class UpdateArgs(Args):
    id: str = Field(description="Event id.")
    title: str | None = Field(None, description="New title.")
    start: IsoTime | None = Field(None, description="New start time.")
    end: IsoTime | None = Field(None, description="New end time.")
    attendees: EmailList | None = Field(None, description="Replace the attendee list.")
    location: str | None = Field(None, description="New location.")
    description: str | None = Field(None, description="New description.")


@SPEC.action("update_event", UpdateArgs, "Change fields of an event (only the given ones).")
def update_event(store: Store, a: UpdateArgs) -> dict:
    current = store.get("events", a.id, "event")
    patch = a.model_dump(exclude={"id"}, exclude_none=True)
    if not patch:
        raise bad_request("calendar_update_event: give at least one field to change")
    _check_span(patch.get("start", current["start"]), patch.get("end", current["end"]))
    return {"event": store.update("events", a.id, patch)}


@SPEC.action("delete_event", GetArgs, "Delete (cancel) an event.")
def delete_event(store: Store, a: GetArgs) -> dict:
    return {"deleted": store.delete("events", a.id)["id"]}


class FreeArgs(Args):
    date: IsoDate = Field(description="Day to search, YYYY-MM-DD.")
    duration_minutes: int = Field(30, ge=5, le=720, description="Length of the slot wanted.")
    day_start_hour: int = Field(9, ge=0, le=23, description="Working day starts at this hour (UTC).")
    day_end_hour: int = Field(17, ge=1, le=24, description="Working day ends at this hour (UTC).")


@SPEC.action("find_free_slots", FreeArgs, "Free slots of at least duration_minutes on a day, earliest first (30-minute grid).")
def find_free_slots(store: Store, a: FreeArgs) -> dict:
    if a.day_end_hour <= a.day_start_hour:
        raise bad_request("'day_end_hour' must be after 'day_start_hour'")
    day = datetime.fromisoformat(a.date).replace(tzinfo=timezone.utc)
    start, stop = day + timedelta(hours=a.day_start_hour), day + timedelta(hours=a.day_end_hour)
    need, step = timedelta(minutes=a.duration_minutes), timedelta(minutes=30)
    slots, t = [], start
    while t + need <= stop:
        if not any(_overlaps(e, t, t + need) for e in store.items("events")):
            slots.append({"start": format_time(t), "end": format_time(t + need)})
        t += step
    return {"date": a.date, "slots": slots}
