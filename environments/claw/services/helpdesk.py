"""The ``helpdesk`` mock service: support tickets with comments, status, priority, tags."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from environments.claw.core import (
    Args, Collection, Email, ServiceSpec, Store, StrList, bad_request, joined, rank,
)

Status = Literal["open", "pending", "resolved", "closed"]
Priority = Literal["low", "normal", "high", "urgent"]

SPEC = ServiceSpec(
    "helpdesk",
    "A support helpdesk: list and read tickets, comment on them, change status/priority/assignee/tags.",
    {
        "tickets": Collection(
            prefix="T",
            defaults={
                "subject": "", "requester_name": "", "requester_email": "", "status": "open",
                "priority": "normal", "assignee": None, "tags": [], "created": None, "comments": [],
            },
            required=("subject", "requester_email"),
        )
    },
    extras={"agent": {"name": "Support Agent", "email": "support@example.test"}},
)


def _summary(t: dict) -> dict:
    keys = ("id", "subject", "requester_name", "requester_email", "status", "priority", "assignee", "tags", "created")
    return {k: t.get(k) for k in keys} | {"n_comments": len(t.get("comments", []))}


class ListArgs(Args):
    status: Status | None = Field(None, description="Only tickets with this status.")
    requester: str | None = Field(None, description="Only tickets whose requester name or email contains this.")
    tag: str | None = Field(None, description="Only tickets with this tag.")
    query: str | None = Field(None, description="Keywords matched against subject and comments.")
    limit: int = Field(50, ge=1, le=200, description="Maximum number of tickets.")


@SPEC.action("list_tickets", ListArgs, "List tickets (summaries), optionally filtered.")
def list_tickets(store: Store, a: ListArgs) -> dict:
    tickets = store.items("tickets")
    if a.status:
        tickets = [t for t in tickets if t.get("status") == a.status]
    if a.requester:
        r = a.requester.lower()
        tickets = [t for t in tickets if r in f"{t.get('requester_name', '')} {t.get('requester_email', '')}".lower()]
    if a.tag:
        tickets = [t for t in tickets if a.tag.lower() in (x.lower() for x in t.get("tags", []))]
    tickets = rank(a.query, tickets, lambda t: joined(t, "subject") + " " + " ".join(c.get("body", "") for c in t.get("comments", [])))
    return {"tickets": [_summary(t) for t in tickets[: a.limit]]}


SPEC.get_action("get_ticket", collection="tickets", kind="ticket", id_description="Ticket id, e.g. T-1042.",
                description="Get a ticket with all its comments.")


class CreateArgs(Args):
    subject: str = Field(description="Ticket subject.", min_length=1)
    requester_email: Email = Field(description="Requester's email.")
    requester_name: str = Field("", description="Requester's name.")
    body: str = Field("", description="First comment (the request).")
    priority: Priority = Field("normal", description="Priority.")
    tags: StrList = Field(default_factory=list, description="Tags.")


@SPEC.action("create_ticket", CreateArgs, "Open a new ticket.")
def create_ticket(store: Store, a: CreateArgs) -> dict:
    now = store.now()
    comments = [{"author": a.requester_email, "body": a.body, "public": True, "date": now}] if a.body else []
    ticket = store.insert(
        "tickets",
        a.model_dump(exclude={"body"}) | {"status": "open", "created": now, "comments": comments},
    )
    return {"ticket": _summary(ticket)}


class CommentArgs(Args):
    id: str = Field(description="Ticket id.")
    body: str = Field(description="Comment text.", min_length=1)
    public: bool = Field(True, description="True: visible to the requester (a reply). False: internal note.")


@SPEC.action("comment", CommentArgs, "Add a comment to a ticket (public reply to the requester, or internal note).")
def comment(store: Store, a: CommentArgs) -> dict:
    ticket = store.get("tickets", a.id, "ticket")
    author = store.state.get("agent", {}).get("email", "support@example.test")
    entry = {"author": author, "body": a.body, "public": a.public, "date": store.now()}
    updated = store.update("tickets", a.id, {"comments": [*ticket.get("comments", []), entry]})
    return {"id": a.id, "comment": entry, "n_comments": len(updated["comments"])}


class UpdateArgs(Args):
    id: str = Field(description="Ticket id.")
    status: Status | None = Field(None, description="New status.")
    priority: Priority | None = Field(None, description="New priority.")
    assignee: str | None = Field(None, description="Assign to this agent (name or email).")
    add_tags: StrList = Field(default_factory=list, description="Tags to add.")
    remove_tags: StrList = Field(default_factory=list, description="Tags to remove.")


@SPEC.action("update_ticket", UpdateArgs, "Change a ticket's status, priority, assignee or tags.")
def update_ticket(store: Store, a: UpdateArgs) -> dict:
    ticket = store.get("tickets", a.id, "ticket")
    patch = a.model_dump(include={"status", "priority", "assignee"}, exclude_none=True)
    if a.add_tags or a.remove_tags:
        drop = {t.lower() for t in a.remove_tags}
        tags = [t for t in ticket.get("tags", []) if t.lower() not in drop]
        tags += [t for t in a.add_tags if t.lower() not in (x.lower() for x in tags)]
        patch["tags"] = tags
    if not patch:
        raise bad_request("helpdesk_update_ticket: give at least one of status, priority, assignee, add_tags, remove_tags")
    return {"ticket": _summary(store.update("tickets", a.id, patch))}
