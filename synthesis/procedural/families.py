"""Procedural claw task families: seeded fixtures, varied instructions, oracle and checks.

Each family is a function ``(rng, difficulty) -> ProceduralTask`` registered in
:data:`FAMILIES`; :func:`generate` makes a (family, seed, difficulty) deterministic. The
difficulty knob scales distractors, the number of targets and the steps needed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from environments.family_registry import Difficulty, FamilyRegistry
from synthesis.procedural import fixtures as fx
from synthesis.procedural.spec import ProceduralTask, Step

Family = Callable[[random.Random, Difficulty], ProceduralTask]
_REGISTRY: FamilyRegistry[ProceduralTask] = FamilyRegistry("procedural")
FAMILIES: dict[str, Family] = _REGISTRY.families
generate = _REGISTRY.generate
#: Services each family uses (for pools, docs and the multi-service count).
FAMILY_SERVICES: dict[str, list[str]] = {}
#: The domain each family generates tasks for (claw unless registered otherwise).
FAMILY_DOMAIN: dict[str, str] = {}

_SCALE = {"easy": 0, "medium": 1, "hard": 2}


def family(name: str, services: list[str], domain: str = "claw") -> Callable[[Family], Family]:
    def deco(fn: Family) -> Family:
        FAMILY_SERVICES[name] = services
        FAMILY_DOMAIN[name] = domain
        return _REGISTRY.register(name, fn)

    return deco


def _task(category: str, title: str, instruction: str, services: list[str], fixtures: dict,
          solution: list[Step], checks: list[dict], keywords: list[str]) -> ProceduralTask:
    return ProceduralTask(
        family="", seed=0, difficulty="easy", category=category, title=title,
        instruction=instruction.strip(), services=services, fixtures=fixtures,
        solution=solution, checks=checks, keywords=keywords,
    )


def _mailbox(rng: random.Random, n: int, people: list[fx.Person], start: int = 1) -> list[dict]:
    """``n`` plausible distractor messages from ``people``."""
    subjects = [
        "Lunch on {d}?", "Notes from the {t}", "Re: {t} agenda", "Slides for the {t}",
        "Travel to {c}", "Quick question about project {p}", "Weekly digest", "Parking update",
    ]
    out = []
    for i in range(n):
        p = rng.choice(people)
        subj = rng.choice(subjects).format(d=rng.choice(["Tuesday", "Friday"]), t=rng.choice(fx.MEETING_TOPICS),
                                           c=rng.choice(fx.CITIES), p=rng.choice(fx.PROJECTS))
        out.append({
            "id": f"m{start + i}", "thread_id": f"t{start + i}", "from": p.email, "to": [fx.USER_EMAIL],
            "cc": [], "subject": subj, "body": f"Hi Alex,\n\n{subj}. Let me know what you think.\n\n{p.first}",
            "date": fx.iso(fx.NOW - timedelta(hours=3 * (i + 1))), "labels": ["INBOX"], "read": rng.random() < 0.5,
            "in_reply_to": None,
        })
    return out


def _gmail(messages: list[dict]) -> dict:
    return {"user": {"email": fx.USER_EMAIL, "name": fx.USER_NAME}, "now": fx.iso(fx.NOW), "messages": messages}


# 1 ───────────────────────────────────────────────────────────────── gmail: reply
@family("mail-reply", ["gmail"])
def mail_reply(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 8)
    client = folks[0]
    invoice = fx.code(rng, "INV", 5)
    amount = rng.randrange(400, 9000)
    pay_day = fx.day(rng.randrange(3, 12))
    messages = _mailbox(rng, 2 + 4 * _SCALE[difficulty], folks[1:], start=2)
    target = {
        "id": "m1", "thread_id": "t1", "from": client.email, "to": [fx.USER_EMAIL], "cc": [],
        "subject": f"Invoice {invoice} – payment date?",
        "body": f"Hello Alex,\n\nCould you confirm when invoice {invoice} (${amount}) will be paid?\n\nThanks,\n{client.name}\n{client.company}",
        "date": fx.iso(fx.NOW - timedelta(hours=1)), "labels": ["INBOX"], "read": False, "in_reply_to": None,
    }
    if difficulty == "hard":  # a decoy about another invoice from the same sender
        other = fx.code(rng, "INV", 5)
        messages.append({**target, "id": "m99", "thread_id": "t99", "subject": f"Invoice {other} – receipt",
                         "body": f"Receipt for {other} attached.\n{client.first}", "date": fx.iso(fx.NOW - timedelta(days=2))})
    messages.insert(rng.randrange(len(messages) + 1), target)
    when = fx.human_date(pay_day)
    instruction = rng.choice([
        f"{client.name} emailed asking when invoice {invoice} will be paid. Reply to that email and tell them it will be paid on {when}; mention the invoice number in the reply.",
        f"Find the email from {client.first} at {client.company} about invoice {invoice} and reply confirming payment on {when}. Include the invoice number.",
        f"Answer the payment question about {invoice} in my inbox: reply to the sender that we pay it on {when} (quote the invoice number).",
    ])
    body = f"Hi {client.first},\n\nInvoice {invoice} will be paid on {when}.\n\nBest,\nAlex"
    return _task(
        "email", f"Reply about invoice {invoice}", instruction, ["gmail"], {"gmail": _gmail(messages)},
        [Step.call("gmail_reply", id="m1", body=body)],
        [
            {"name": "replied_to_thread", "kind": "state", "service": "gmail", "collection": "messages",
             "where": {"in_reply_to": {"eq": "m1"}, "body": {"all_contain": [invoice, str(pay_day.day)]}}},
            {"name": "addressed_to_client", "kind": "state", "service": "gmail", "collection": "messages",
             "where": {"in_reply_to": {"eq": "m1"}, "to": {"contains": client.email}}},
            {"name": "no_other_mail_sent", "kind": "audit", "service": "gmail",
             "where": {"kind": {"eq": "call"}, "tool": {"in": ["gmail_send", "gmail_forward"]}, "ok": {"eq": True}}, "count": 0},
        ],
        ["email", "reply", "invoice"],
    )


# 2 ───────────────────────────────────────────────────────────────── gmail: label
@family("mail-label", ["gmail"])
def mail_label(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 10, companies=4)
    cname, _, domain = fx.company(rng)
    k = 1 + _SCALE[difficulty] + (1 if difficulty == "hard" else 0)
    clients = [fx.Person(rng.choice(fx.FIRST), ln, cname, domain) for ln in rng.sample(fx.LAST, k)]
    messages = _mailbox(rng, 3 + 3 * _SCALE[difficulty], [p for p in folks if p.domain != domain], start=1)
    ids = []
    for i, c in enumerate(clients):
        mid = f"m{50 + i}"
        ids.append(mid)
        messages.insert(rng.randrange(len(messages) + 1), {
            "id": mid, "thread_id": f"t{50 + i}", "from": c.email, "to": [fx.USER_EMAIL], "cc": [],
            "subject": f"{rng.choice(fx.MEETING_TOPICS).capitalize()} follow-up", "body": f"Hi Alex, a note from {cname}.\n{c.first}",
            "date": fx.iso(fx.NOW - timedelta(hours=5 + i)), "labels": ["INBOX"], "read": False, "in_reply_to": None,
        })
    label = f"Client-{fx.slug(cname.split()[0]).capitalize()}"
    instruction = rng.choice([
        f"Label every email from {cname} (anyone @{domain}) with the label \"{label}\". Leave other emails alone.",
        f"Tag all messages sent by people at {domain} as \"{label}\" in Gmail; no other message should get that label.",
        f"Organize my inbox: each email from the {cname} team needs the \"{label}\" label.",
    ])
    checks = [{"name": f"labeled_{mid}", "kind": "state", "service": "gmail", "collection": "messages",
               "where": {"id": {"eq": mid}, "labels": {"contains": label}}} for mid in ids]
    checks.append({"name": "only_client_mail_labeled", "kind": "state", "service": "gmail", "collection": "messages",
                   "where": {"labels": {"contains": label}}, "count": len(ids)})
    return _task(
        "email", f"Label {cname} emails", instruction, ["gmail"], {"gmail": _gmail(messages)},
        [Step.call("gmail_label", id=mid, add=[label]) for mid in ids], checks,
        ["email", "labels", "triage"],
    )


# 3 ───────────────────────────────────────────────────────────── calendar: schedule
@family("calendar-schedule", ["calendar"])
def calendar_schedule(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 6)
    guests = folks[: 1 + _SCALE[difficulty]]
    topic = rng.choice(fx.MEETING_TOPICS)
    day = fx.day(rng.randrange(1, 5))
    busy_hours = sorted(rng.sample(range(9, 16), 2 + 2 * _SCALE[difficulty]))
    events = []
    for i, h in enumerate(busy_hours):
        start = day + timedelta(hours=h)
        events.append({"id": f"e{i + 1}", "title": rng.choice(fx.MEETING_TOPICS).capitalize(), "start": fx.iso(start),
                       "end": fx.iso(start + timedelta(hours=1)), "attendees": [rng.choice(folks[3:]).email],
                       "location": "", "description": ""})
    minutes = 30 if difficulty == "easy" else 60
    if difficulty == "hard":  # the agent must find the first free hour between 9 and 17
        hour = next(h for h in range(9, 17) if h not in busy_hours)
        when = f"in the first free one-hour slot on {fx.human_date(day)} between 09:00 and 17:00 UTC"
    else:
        hour = next(h for h in rng.sample(range(9, 17), 8) if h not in busy_hours)
        when = f"on {fx.human_date(day)} at {hour:02d}:00 UTC for {minutes} minutes"
    start = day + timedelta(hours=hour)
    end = start + timedelta(minutes=minutes)
    title = f"{topic.capitalize()} – {rng.choice(fx.PROJECTS)}"
    names = ", ".join(g.name for g in guests)
    instruction = rng.choice([
        f"Put a meeting called \"{title}\" on my calendar {when}, and invite {names}.",
        f"Schedule \"{title}\" {when}. Attendees: {', '.join(g.email for g in guests)}.",
        f"Please book a calendar event titled \"{title}\" {when} with {names} as attendees.",
    ])
    contacts = {"contacts": [{"id": f"c{i}", "name": p.name, "email": p.email, "phone": "", "company": p.company,
                              "title": "", "notes": ""} for i, p in enumerate(folks)]}
    services = ["calendar", "contacts"] if "invite " in instruction or " with " in instruction else ["calendar"]
    fixtures = {"calendar": {"user": {"email": fx.USER_EMAIL, "timezone": "UTC"}, "now": fx.iso(fx.NOW), "events": events}}
    if "contacts" in services:
        fixtures["contacts"] = contacts
    return _task(
        "calendar", title, instruction, services, fixtures,
        [Step.call("calendar_create_event", title=title, start=fx.iso(start), end=fx.iso(end),
                   attendees=[g.email for g in guests])],
        [
            {"name": "event_created", "kind": "state", "service": "calendar", "collection": "events",
             "where": {"title": {"contains": title}, "start": {"time_eq": fx.iso(start)}, "end": {"time_eq": fx.iso(end)}}},
            {"name": "guests_invited", "kind": "state", "service": "calendar", "collection": "events",
             "where": {"title": {"contains": title}, "attendees": {"all_contain": [g.email for g in guests]}}},
            {"name": "existing_events_kept", "kind": "state", "service": "calendar", "collection": "events",
             "where": {"id": {"in": [e["id"] for e in events]}}, "count": len(events)},
        ],
        ["calendar", "scheduling"],
    )


# 4 ─────────────────────────────────────────────────────────────── calendar: cancel
@family("calendar-cancel", ["calendar"])
def calendar_cancel(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 8)
    n = 3 + 3 * _SCALE[difficulty]
    events = []
    for i in range(n):
        start = fx.day(rng.randrange(1, 6)) + timedelta(hours=rng.randrange(9, 17))
        events.append({"id": f"e{i + 1}", "title": rng.choice(fx.MEETING_TOPICS).capitalize(), "start": fx.iso(start),
                       "end": fx.iso(start + timedelta(minutes=45)), "attendees": [folks[i % len(folks)].email],
                       "location": rng.choice(["", "Room 2", "Zoom"]), "description": ""})
    target = rng.choice(events)
    person = next(p for p in folks if p.email == target["attendees"][0])
    rest = [p for p in folks if p is not person]
    for e in events:  # the target is the only event with that person
        if e is not target and e["attendees"][0] == person.email:
            e["attendees"] = [rng.choice(rest).email]
    same_person = [e for e in events if e["attendees"][0] == person.email]
    start = fx.NOW.fromisoformat(target["start"].replace("Z", "+00:00"))
    when = fx.human_date(start) if len(same_person) > 1 or difficulty != "easy" else "this week"
    instruction = rng.choice([
        f"{person.name} can't make our meeting {('on ' + when) if when != 'this week' else when}. Cancel (delete) it from my calendar and keep everything else.",
        f"Remove the \"{target['title']}\" event with {person.first} {'on ' + when if when != 'this week' else when} from my calendar.",
        f"Delete my calendar event with {person.email} {'on ' + when if when != 'this week' else when}; do not touch other events.",
    ])
    return _task(
        "calendar", f"Cancel meeting with {person.name}", instruction, ["calendar"],
        {"calendar": {"user": {"email": fx.USER_EMAIL, "timezone": "UTC"}, "now": fx.iso(fx.NOW), "events": events}},
        [Step.call("calendar_delete_event", id=target["id"])],
        [
            {"name": "target_deleted", "kind": "state", "service": "calendar", "collection": "events",
             "where": {"id": {"eq": target["id"]}}, "count": 0},
            {"name": "others_kept", "kind": "state", "service": "calendar", "collection": "events",
             "where": {"id": {"ne": target["id"]}}, "count": n - 1},
        ],
        ["calendar", "cancel"],
    )


def _tickets(rng: random.Random, n: int, folks: list[fx.Person], start: int) -> list[dict]:
    out = []
    for i in range(n):
        p = rng.choice(folks)
        prod, prob = rng.choice(fx.PRODUCTS), rng.choice(fx.PROBLEMS)
        out.append({"id": f"T-{start + i}", "subject": f"{prod.capitalize()} {prob}", "requester_name": p.name,
                    "requester_email": p.email, "status": "open", "priority": "normal", "assignee": None, "tags": [],
                    "created": fx.iso(fx.NOW - timedelta(hours=2 * i + 1)),
                    "comments": [{"author": p.email, "body": f"Our {prod} {prob} since yesterday.", "public": True,
                                  "date": fx.iso(fx.NOW - timedelta(hours=2 * i + 1))}]})
    return out


# 5 ──────────────────────────────────────────────────────────────── helpdesk: triage
@family("ticket-triage", ["helpdesk"])
def ticket_triage(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 8)
    product = rng.choice(fx.PRODUCTS)
    others = [p for p in fx.PRODUCTS if p != product]
    tickets = _tickets(rng, 3 + 3 * _SCALE[difficulty], folks, 1000)
    for t in tickets:  # distractors never mention the product
        if product in t["subject"].lower():
            alt = rng.choice(others)
            t["subject"] = t["subject"].lower().replace(product, alt).capitalize()
            t["comments"][0]["body"] = t["comments"][0]["body"].replace(product, alt)
    k = 1 + _SCALE[difficulty]
    targets = []
    for i in range(k):
        p = rng.choice(folks)
        tid = f"T-{2000 + i}"
        targets.append(tid)
        tickets.insert(rng.randrange(len(tickets) + 1), {
            "id": tid, "subject": f"{product.capitalize()} {rng.choice(fx.PROBLEMS)}", "requester_name": p.name,
            "requester_email": p.email, "status": "open", "priority": "normal", "assignee": None, "tags": [],
            "created": fx.iso(fx.NOW - timedelta(minutes=30 * (i + 1))),
            "comments": [{"author": p.email, "body": f"The {product} is broken for our whole team.", "public": True,
                          "date": fx.iso(fx.NOW - timedelta(minutes=30 * (i + 1)))}]})
    agent = rng.choice(["sam@acme.test", "lee@acme.test", "kim@acme.test"])
    priority = "urgent" if difficulty == "hard" else "high"
    tag = fx.slug(product).replace(" ", "-")
    instruction = rng.choice([
        f"There is an outage of the {product} feature. Find every open ticket about the {product}, set its priority to {priority}, assign it to {agent} and add the tag \"{tag}\".",
        f"Triage the helpdesk: tickets reporting problems with {product} should become {priority} priority, be assigned to {agent}, and be tagged {tag}. Leave unrelated tickets unchanged.",
        f"Escalate all {product} tickets: priority {priority}, assignee {agent}, tag \"{tag}\".",
    ])
    checks = [{"name": f"escalated_{t}", "kind": "state", "service": "helpdesk", "collection": "tickets",
               "where": {"id": {"eq": t}, "priority": {"eq": priority}, "assignee": {"eq": agent}, "tags": {"contains": tag}}}
              for t in targets]
    checks.append({"name": "unrelated_untouched", "kind": "state", "service": "helpdesk", "collection": "tickets",
                   "where": {"priority": {"eq": priority}}, "count": k})
    return _task(
        "support", f"Escalate {product} tickets", instruction, ["helpdesk"], {"helpdesk": {"now": fx.iso(fx.NOW), "tickets": tickets}},
        [Step.call("helpdesk_update_ticket", id=t, priority=priority, assignee=agent, add_tags=[tag]) for t in targets],
        checks, ["helpdesk", "triage", "escalation"],
    )


# 6 ──────────────────────────────────────────────────────── kb + helpdesk: answer
@family("kb-answer-ticket", ["kb", "helpdesk"])
def kb_answer_ticket(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 6)
    prods = rng.sample(fx.PRODUCTS, 3 + 2 * _SCALE[difficulty])
    articles = []
    for i, prod in enumerate(prods):
        articles.append({"id": f"KB-{100 + i * 7}", "title": f"Troubleshooting {prod}",
                         "body": f"If {prod} {rng.choice(fx.PROBLEMS)}, clear the cache and retry. Step {i + 1}: check settings.",
                         "tags": [fx.slug(prod)], "category": "how-to"})
    article = rng.choice(articles)
    prod = article["title"].removeprefix("Troubleshooting ")
    tickets = _tickets(rng, 1 + 2 * _SCALE[difficulty], folks, 3000)
    req = rng.choice(folks)
    tid = f"T-{rng.randrange(4000, 4999)}"
    tickets.append({"id": tid, "subject": f"Help: {prod} not working", "requester_name": req.name, "requester_email": req.email,
                    "status": "open", "priority": "normal", "assignee": None, "tags": [], "created": fx.iso(fx.NOW),
                    "comments": [{"author": req.email, "body": f"How do I fix the {prod}?", "public": True, "date": fx.iso(fx.NOW)}]})
    status = "pending" if difficulty != "easy" else "resolved"
    instruction = rng.choice([
        f"Ticket {tid} from {req.name} asks about {prod}. Find the matching knowledge-base article and post a public reply on the ticket that cites the article id, then set the ticket status to {status}.",
        f"Answer {req.first}'s helpdesk ticket about {prod} using our KB: leave a public comment containing the article's id (e.g. KB-123) and mark the ticket {status}.",
        f"Use the knowledge base to respond to ticket {tid}: public comment referencing the right KB article id; ticket status -> {status}.",
    ])
    return _task(
        "support", f"Answer {tid} from KB", instruction, ["kb", "helpdesk"],
        {"kb": {"articles": articles}, "helpdesk": {"now": fx.iso(fx.NOW), "tickets": tickets}},
        [Step.call("helpdesk_comment", id=tid, body=f"Hi {req.first}, please follow {article['id']}: {article['title']}.", public=True),
         Step.call("helpdesk_update_ticket", id=tid, status=status)],
        [
            {"name": "cites_article", "kind": "state", "service": "helpdesk", "collection": "tickets",
             "where": {"id": {"eq": tid}, "comments": {"contains": article["id"]}}},
            {"name": "status_set", "kind": "state", "service": "helpdesk", "collection": "tickets",
             "where": {"id": {"eq": tid}, "status": {"eq": status}}},
        ],
        ["helpdesk", "knowledge-base", "support"],
    )


# 7 ──────────────────────────────────────────────────────────── gmail + crm: deal
@family("crm-deal-won", ["gmail", "crm"])
def crm_deal_won(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 6, companies=4)
    client = folks[0]
    accounts, deals = [], []
    comps = {p.company: p.domain for p in folks}
    for i, (cname, dom) in enumerate(sorted(comps.items())):
        aid = f"ACC-{i + 1}"
        accounts.append({"id": aid, "name": cname, "industry": "", "owner": "Alex Doe", "domain": dom, "notes": ""})
        for j in range(1 + _SCALE[difficulty]):
            deals.append({"id": f"D-{i + 1}{j}", "account_id": aid, "name": f"{cname.split()[0]} {rng.choice(fx.PROJECTS)} {2026 + j}",
                          "stage": rng.choice(["qualified", "proposal", "negotiation"]), "amount": float(rng.randrange(5, 90) * 1000),
                          "close_date": fx.day(20 + j).strftime("%Y-%m-%d")})
    acc = next(a for a in accounts if a["name"] == client.company)
    deal = next(d for d in deals if d["account_id"] == acc["id"])
    deal["stage"] = "negotiation"
    messages = _mailbox(rng, 2 + 2 * _SCALE[difficulty], folks[1:], start=2)
    messages.insert(0, {"id": "m1", "thread_id": "t1", "from": client.email, "to": [fx.USER_EMAIL], "cc": [],
                        "subject": f"Re: {deal['name']} proposal", "body": f"Alex, we accept the proposal for {deal['name']}. Please send the paperwork.\n{client.name}",
                        "date": fx.iso(fx.NOW - timedelta(minutes=20)), "labels": ["INBOX"], "read": False, "in_reply_to": None})
    instruction = rng.choice([
        f"{client.name} just emailed that {client.company} accepts our proposal. Mark the deal \"{deal['name']}\" as won in the CRM and log a note activity on their account saying the proposal was accepted.",
        f"Read the latest email from {client.first} and update the CRM: the deal it refers to is won; also log an activity (type note) on the {client.company} account.",
        f"Close the {deal['name']} deal as won in the CRM based on {client.first}'s email, and record a note activity on the account.",
    ])
    return _task(
        "sales", f"Close deal {deal['name']}", instruction, ["gmail", "crm"],
        {"gmail": _gmail(messages), "crm": {"now": fx.iso(fx.NOW), "accounts": accounts, "deals": deals, "activities": []}},
        [Step.call("crm_update_deal", id=deal["id"], stage="won"),
         Step.call("crm_log_activity", account_id=acc["id"], type="note", subject="Proposal accepted",
                   body=f"{client.name} accepted the proposal for {deal['name']}.")],
        [
            {"name": "deal_won", "kind": "state", "service": "crm", "collection": "deals",
             "where": {"id": {"eq": deal["id"]}, "stage": {"eq": "won"}}},
            {"name": "only_that_deal_won", "kind": "state", "service": "crm", "collection": "deals",
             "where": {"stage": {"eq": "won"}}, "count": 1},
            {"name": "activity_logged", "kind": "state", "service": "crm", "collection": "activities",
             "where": {"account_id": {"eq": acc["id"]}}},
        ],
        ["crm", "sales", "email"],
    )


# 8 ─────────────────────────────────────────────────────── gmail + contacts: add
@family("contact-from-email", ["gmail", "contacts"])
def contact_from_email(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 7)
    new = folks[0]
    title = rng.choice(["Head of Procurement", "CTO", "Operations Lead", "Account Manager", "Finance Director"])
    phone = f"+1-555-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}"
    messages = _mailbox(rng, 2 + 3 * _SCALE[difficulty], folks[1:], start=2)
    messages.insert(rng.randrange(len(messages) + 1), {
        "id": "m1", "thread_id": "t1", "from": new.email, "to": [fx.USER_EMAIL], "cc": [], "subject": "Introduction",
        "body": f"Hi Alex,\n\nNice to meet you at the {rng.choice(fx.CITIES)} conference.\n\n--\n{new.name}\n{title}, {new.company}\nPhone: {phone}",
        "date": fx.iso(fx.NOW - timedelta(hours=2)), "labels": ["INBOX"], "read": False, "in_reply_to": None})
    existing = [{"id": f"c{i}", "name": p.name, "email": p.email, "phone": "", "company": p.company, "title": "", "notes": ""}
                for i, p in enumerate(folks[1:4])]
    instruction = rng.choice([
        f"Add {new.name}, who wrote me an introduction email, to my contacts with their email, phone, company and job title from the signature.",
        "Create a contact for the person who sent the \"Introduction\" email. Copy name, email, phone number, company and title from their signature.",
        f"Save {new.first}'s details (from their email signature) as a new contact: name, email, phone, company, title.",
    ])
    return _task(
        "contacts", f"Add contact {new.name}", instruction, ["gmail", "contacts"],
        {"gmail": _gmail(messages), "contacts": {"contacts": existing}},
        [Step.call("contacts_create", name=new.name, email=new.email, phone=phone, company=new.company, title=title)],
        [
            {"name": "contact_created", "kind": "state", "service": "contacts", "collection": "contacts",
             "where": {"email": {"eq": new.email}, "name": {"eq": new.name}}, "count": 1},
            {"name": "details_copied", "kind": "state", "service": "contacts", "collection": "contacts",
             "where": {"email": {"eq": new.email}, "phone": {"contains": phone[-4:]}, "company": {"eq": new.company}, "title": {"eq": title}}},
        ],
        ["contacts", "email"],
    )


# 9 ───────────────────────────────────────────────────────── gmail + notes: todos
@family("todos-from-email", ["gmail", "notes"])
def todos_from_email(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 5)
    boss = folks[0]
    pool = ["book the venue in {c}", "send the {p} budget to finance", "review the {p} contract",
            "update the onboarding slides", "call {n} about the renewal", "order new badges",
            "draft the {p} press release", "renew the SSL certificate"]
    k = 2 + _SCALE[difficulty]
    items = [s.format(c=rng.choice(fx.CITIES), p=rng.choice(fx.PROJECTS), n=rng.choice(folks[1:]).first)
             for s in rng.sample(pool, k)]
    bullet = "\n".join(f"- {i}" for i in items)
    messages = _mailbox(rng, 2 + 2 * _SCALE[difficulty], folks[1:], start=2)
    messages.insert(0, {"id": "m1", "thread_id": "t1", "from": boss.email, "to": [fx.USER_EMAIL], "cc": [],
                        "subject": "Action items for this week", "body": f"Alex, please take care of these:\n{bullet}\nThanks,\n{boss.first}",
                        "date": fx.iso(fx.NOW - timedelta(minutes=45)), "labels": ["INBOX"], "read": False, "in_reply_to": None})
    todos = [{"id": "td1", "title": "water the plants", "done": False, "due": None, "notes": ""}]
    instruction = rng.choice([
        f"{boss.name} sent me a list of action items. Add each one to my todo list as a separate todo (use the item text as the title).",
        "Turn every action item from this week's \"Action items\" email into its own todo in my notes app.",
        f"Go through {boss.first}'s action-item email and create one todo per item.",
    ])
    checks = [{"name": f"todo_{i + 1}", "kind": "state", "service": "notes", "collection": "todos",
               "where": {"title": {"contains": item}}} for i, item in enumerate(items)]
    checks.append({"name": "one_todo_per_item", "kind": "state", "service": "notes", "collection": "todos", "count": k + 1})
    return _task(
        "productivity", "Todos from action items", instruction, ["gmail", "notes"],
        {"gmail": _gmail(messages), "notes": {"notes": [], "todos": todos}},
        [Step.call("notes_add_todo", title=item) for item in items], checks,
        ["notes", "todos", "email"],
    )


# 10 ─────────────────────────────────────────────────────── files + workspace: sum
@family("expense-report", ["files"])
def expense_report(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    cats = ["travel", "meals", "software", "hardware", "training"]
    cat = rng.choice(cats)
    n_files = 1 + _SCALE[difficulty]
    files, total = [], 0.0
    for f in range(n_files):
        rows = ["date,category,amount,description"]
        for r in range(4 + 3 * _SCALE[difficulty]):
            c = cat if r % 3 == 0 else rng.choice(cats)
            amt = round(rng.randrange(500, 60000) / 100, 2)
            if c == cat:
                total += amt
            rows.append(f"2026-0{1 + f}-{10 + r:02d},{c},{amt:.2f},{rng.choice(fx.CITIES)} {c}")
        files.append({"path": f"/finance/expenses-2026-0{1 + f}.csv", "content": "\n".join(rows) + "\n"})
    files.append({"path": "/finance/README.txt", "content": "Monthly expense exports. Amounts in USD."})
    total = round(total, 2)
    scope = "the expense file" if n_files == 1 else f"all {n_files} monthly expense files"
    instruction = rng.choice([
        f"Add up the {cat} expenses in {scope} under /finance on my drive and write the total (a number in USD, two decimals) to answer.txt in the workspace.",
        f"What did we spend on {cat}? Use {scope} in the drive's /finance folder and put just the total in ./answer.txt.",
        f"Compute total {cat} spend from {scope} (/finance on the cloud drive). Write the amount to answer.txt.",
    ])
    return _task(
        "files", f"Total {cat} expenses", instruction, ["files"], {"files": {"files": files}},
        [Step.call("files_read", path=f["path"]) for f in files[:-1]] + [Step.write("answer.txt", f"{total:.2f}\n")],
        [
            {"name": "answer_written", "kind": "file", "path": "answer.txt", "number": total},
            {"name": "drive_unchanged", "kind": "audit", "service": "files",
             "where": {"kind": {"eq": "change"}}, "count": 0},
        ],
        ["files", "spreadsheet", "arithmetic"],
    )
