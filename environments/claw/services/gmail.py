"""The ``gmail`` mock service: one mailbox (search, read, send, reply, forward, label)."""

from __future__ import annotations

from pydantic import Field

from environments.claw.core import Args, Collection, EmailList, ServiceSpec, Store, StrList, bad_request, joined, rank

SPEC = ServiceSpec(
    "gmail",
    "An email mailbox: search and read messages, send, reply, forward, and label them.",
    {
        "messages": Collection(
            prefix="m",
            defaults={
                "thread_id": None, "from": "", "to": [], "cc": [], "subject": "", "body": "",
                "date": None, "labels": ["INBOX"], "read": False, "in_reply_to": None,
            },
            required=("from", "subject"),
        )
    },
    extras={"user": {"email": "me@example.test", "name": "Me"}},
)


def _me(store: Store) -> str:
    return str(store.state.get("user", {}).get("email", "me@example.test"))


def _summary(msg: dict) -> dict:
    snippet = " ".join(str(msg.get("body", "")).split())[:120]
    return {k: msg.get(k) for k in ("id", "thread_id", "from", "to", "subject", "date", "labels", "read")} | {
        "snippet": snippet
    }


class SearchArgs(Args):
    query: str | None = Field(None, description="Keywords matched against sender, recipients, subject and body.")
    label: str | None = Field(None, description="Only messages with this label (INBOX, SENT, or a custom label).")
    sender: str | None = Field(None, description="Only messages whose From contains this text.")
    unread_only: bool = Field(False, description="Only unread messages.")
    limit: int = Field(20, ge=1, le=100, description="Maximum number of results.")


@SPEC.action("search", SearchArgs, "Search the mailbox; returns message summaries (id, from, subject, snippet), best match first.")
def search(store: Store, a: SearchArgs) -> dict:
    msgs = store.items("messages")
    if a.label:
        msgs = [m for m in msgs if a.label.lower() in (lbl.lower() for lbl in m.get("labels", []))]
    if a.sender:
        msgs = [m for m in msgs if a.sender.lower() in str(m.get("from", "")).lower()]
    if a.unread_only:
        msgs = [m for m in msgs if not m.get("read")]
    found = rank(a.query, msgs, lambda m: joined(m, "from", "to", "cc", "subject", "body"))
    return {"messages": [_summary(m) for m in found[: a.limit]], "total": len(found)}


class ReadArgs(Args):
    id: str = Field(description="Message id from gmail_search.")


@SPEC.action("read", ReadArgs, "Read one message in full (marks it read).")
def read(store: Store, a: ReadArgs) -> dict:
    msg = store.get("messages", a.id, "message")
    if not msg.get("read"):
        msg = store.update("messages", a.id, {"read": True})
    return {"message": dict(msg)}


class SendArgs(Args):
    to: EmailList = Field(description="Recipient email addresses.", min_length=1)
    subject: str = Field(description="Subject line.")
    body: str = Field(description="Plain-text body.")
    cc: EmailList = Field(default_factory=list, description="CC email addresses.")


@SPEC.action("send", SendArgs, "Send a new email.")
def send(store: Store, a: SendArgs) -> dict:
    ident = store.new_id("messages")
    msg = store.insert(
        "messages",
        {
            "id": ident, "thread_id": f"t-{ident}", "from": _me(store), "to": a.to, "cc": a.cc,
            "subject": a.subject, "body": a.body, "date": store.now(), "labels": ["SENT"], "read": True,
        },
    )
    return {"sent": _summary(msg)}


class ReplyArgs(Args):
    id: str = Field(description="Id of the message to reply to.")
    body: str = Field(description="Plain-text reply body.")
    reply_all: bool = Field(False, description="Also reply to the other recipients and CCs.")


@SPEC.action("reply", ReplyArgs, "Reply to a message (same thread, subject 'Re: ...', to its sender).")
def reply(store: Store, a: ReplyArgs) -> dict:
    orig = store.get("messages", a.id, "message")
    me = _me(store)
    sender = str(orig.get("from", ""))
    to = [list(orig.get("to") or [me])[0]] if sender.lower() == me.lower() else [sender]
    cc: list[str] = []
    if a.reply_all:
        others = list(orig.get("to") or []) + list(orig.get("cc") or [])
        cc = [x for x in others if x.lower() not in {me.lower(), *(t.lower() for t in to)}]
    subject = str(orig.get("subject", ""))
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    ident = store.new_id("messages")
    msg = store.insert(
        "messages",
        {
            "id": ident, "thread_id": orig.get("thread_id") or f"t-{orig['id']}", "from": me, "to": to,
            "cc": cc, "subject": subject, "body": a.body, "date": store.now(), "labels": ["SENT"],
            "read": True, "in_reply_to": orig["id"],
        },
    )
    return {"sent": _summary(msg) | {"in_reply_to": orig["id"]}}


class ForwardArgs(Args):
    id: str = Field(description="Id of the message to forward.")
    to: EmailList = Field(description="Recipient email addresses.", min_length=1)
    note: str = Field("", description="Text added above the forwarded message.")


@SPEC.action("forward", ForwardArgs, "Forward a message to other recipients.")
def forward(store: Store, a: ForwardArgs) -> dict:
    orig = store.get("messages", a.id, "message")
    body = (
        f"{a.note}\n\n---------- Forwarded message ----------\nFrom: {orig.get('from')}\n"
        f"Subject: {orig.get('subject')}\n\n{orig.get('body', '')}"
    ).lstrip()
    ident = store.new_id("messages")
    msg = store.insert(
        "messages",
        {
            "id": ident, "thread_id": f"t-{ident}", "from": _me(store), "to": a.to, "cc": [],
            "subject": f"Fwd: {orig.get('subject', '')}", "body": body, "date": store.now(),
            "labels": ["SENT"], "read": True, "forwarded_from": orig["id"],
        },
    )
    return {"sent": _summary(msg)}


class LabelArgs(Args):
    id: str = Field(description="Message id.")
    add: StrList = Field(default_factory=list, description="Labels to add (e.g. 'Billing').")
    remove: StrList = Field(default_factory=list, description="Labels to remove (e.g. 'INBOX' to archive).")


@SPEC.action("label", LabelArgs, "Add and/or remove labels on a message (remove INBOX to archive).")
def label(store: Store, a: LabelArgs) -> dict:
    if not a.add and not a.remove:
        raise bad_request("gmail_label: give at least one label in 'add' or 'remove'")
    msg = store.get("messages", a.id, "message")
    labels = [lbl for lbl in msg.get("labels", []) if lbl.lower() not in {r.lower() for r in a.remove}]
    for lbl in a.add:
        if lbl.lower() not in (x.lower() for x in labels):
            labels.append(lbl)
    msg = store.update("messages", a.id, {"labels": labels})
    return {"id": a.id, "labels": msg["labels"]}
