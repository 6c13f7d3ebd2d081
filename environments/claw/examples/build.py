"""Source of the example claw task dirs in this folder: fixtures, instruction, verifier
checks and oracle calls of each, written with :mod:`environments.claw.taskgen`.

    python -m environments.claw.examples.build [--out DIR]    # default: this folder

The checked-in dirs must equal what this writes (a test compares content hashes).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.claw.taskgen import environment_files, oracle_script, verifier_script
from environments.taskdir import TaskConfig, TaskDir, write_task

HERE = Path(__file__).resolve().parent
NOW = "2026-03-02T09:00:00Z"


@dataclass
class Example:
    task_id: str
    description: str
    category: str
    difficulty: str
    keywords: list[str]
    instruction: str
    fixtures: dict[str, dict[str, Any]]
    checks: str
    oracle: list[tuple[str, dict[str, Any]]]
    services: list[str] = field(default_factory=list)
    oracle_shell: list[str] = field(default_factory=list)

    def config(self) -> TaskConfig:
        return TaskConfig.model_validate(
            {
                "task": {"name": self.task_id, "description": self.description, "keywords": self.keywords},
                "metadata": {
                    "domain": "claw", "category": self.category, "difficulty": self.difficulty,
                    "purpose": "rl", "services": self.services, "proposer": "handwritten",
                },
                "agent": {"timeout_sec": 600},
                "verifier": {"timeout_sec": 60},
                "environment": {"build_timeout_sec": 600, "cpus": 1, "memory_mb": 1024, "storage_mb": 2048},
            }
        )

    def files(self) -> dict[str, str]:
        return {
            **environment_files(self.services, self.fixtures),
            "tests/test.sh": verifier_script(self.task_id, self.checks),
            "solution/solve.sh": oracle_script(self.task_id, self.oracle, self.oracle_shell),
        }


ME = "alex.morgan@northwind.test"
DANA = "dana.whitfield@brightlane.test"

GMAIL_INVOICE = Example(
    task_id="claw-gmail-invoice-reply",
    services=["gmail"],
    description="Reply to a customer's email about an invoice with its total and due date, then label it.",
    category="email",
    difficulty="easy",
    keywords=["gmail", "invoice", "reply", "label"],
    instruction=(
        "Dana Whitfield from Brightlane Studios emailed me asking about invoice INV-2041.\n\n"
        "Reply to her email (as a reply in the same thread) telling her the invoice total and the "
        "payment due date; both are in the invoice notification from our billing system in my "
        "mailbox. Then add the label \"Billing\" to Dana's email. Do not email anyone else."
    ),
    fixtures={
        "gmail": {
            "now": NOW,
            "user": {"email": ME, "name": "Alex Morgan"},
            "messages": [
                {"id": "m-101", "thread_id": "t-101", "from": DANA, "to": [ME],
                 "subject": "Question about invoice INV-2041",
                 "body": "Hi Alex,\n\nWe received invoice INV-2041 but our copy is missing the total and the "
                         "payment due date. Could you confirm both so we can schedule the payment?\n\n"
                         "Thanks,\nDana Whitfield\nBrightlane Studios",
                 "date": "2026-03-01T16:20:00Z", "labels": ["INBOX"], "read": False},
                {"id": "m-102", "thread_id": "t-102", "from": "billing@northwind.test", "to": [ME],
                 "subject": "Invoice INV-2041 issued to Brightlane Studios",
                 "body": "Invoice: INV-2041\nCustomer: Brightlane Studios\nTotal: USD 4,350.00\n"
                         "Due date: 2026-03-15\nTerms: Net 30",
                 "date": "2026-02-13T10:00:00Z", "labels": ["INBOX"], "read": True},
                {"id": "m-103", "thread_id": "t-103", "from": "billing@northwind.test", "to": [ME],
                 "subject": "Invoice INV-2040 issued to Harbor & Pine",
                 "body": "Invoice: INV-2040\nCustomer: Harbor & Pine\nTotal: USD 1,980.00\n"
                         "Due date: 2026-03-10\nTerms: Net 30",
                 "date": "2026-02-08T10:00:00Z", "labels": ["INBOX"], "read": True},
                {"id": "m-104", "thread_id": "t-104", "from": "sam.okafor@northwind.test", "to": [ME],
                 "cc": [DANA], "subject": "Brightlane kickoff notes",
                 "body": "Notes from the Brightlane kickoff are in the shared drive. Next sync on Friday.",
                 "date": "2026-02-27T12:00:00Z", "labels": ["INBOX"], "read": True},
                {"id": "m-105", "thread_id": "t-105", "from": "news@saasweekly.test", "to": [ME],
                 "subject": "This week in SaaS: invoice automation tips",
                 "body": "Ten tips to get your invoices paid faster...",
                 "date": "2026-03-01T07:00:00Z", "labels": ["INBOX"], "read": False},
            ],
        }
    },
    checks='''
DANA = "dana.whitfield@brightlane.test"
msgs = state("gmail")["messages"]
original = fixture_ids("gmail", "messages")
sent = [m for m in msgs if m["id"] not in original]
replies = [m for m in sent if m.get("in_reply_to") == "m-101"]
body = " ".join(m.get("body", "") for m in replies).lower()
checks["replied_in_thread"] = len(replies) >= 1
checks["reply_addressed_to_dana"] = bool(replies) and all(DANA in [r.lower() for r in m["to"]] for m in replies)
checks["mentions_total"] = "4,350" in body or "4350" in body
checks["mentions_due_date"] = any(d in body for d in ("2026-03-15", "march 15", "15 march", "mar 15", "15 mar", "03/15/2026", "15/03/2026"))
checks["labeled_billing"] = any(l.lower() == "billing" for l in next(m for m in msgs if m["id"] == "m-101")["labels"])
recipients = {r.lower() for m in sent for r in list(m.get("to", [])) + list(m.get("cc", []))}
checks["nobody_else_emailed"] = recipients <= {DANA}
''',
    oracle=[
        ("gmail_search", {"query": "INV-2041"}),
        ("gmail_read", {"id": "m-102"}),
        ("gmail_reply", {"id": "m-101", "body": "Hi Dana,\n\nInvoice INV-2041 totals USD 4,350.00 and payment "
                                                "is due on 2026-03-15 (March 15, 2026).\n\nBest regards,\nAlex"}),
        ("gmail_label", {"id": "m-101", "add": ["Billing"]}),
    ],
)

PRIYA = "priya.raman@quillworks.test"

TICKET_MEETING = Example(
    task_id="claw-ticket-meeting-crm",
    services=["helpdesk", "contacts", "calendar", "crm"],
    description="Schedule a meeting with the requester of a helpdesk ticket at the first free slot and log it in the CRM.",
    category="scheduling",
    difficulty="medium",
    keywords=["helpdesk", "calendar", "contacts", "crm", "meeting"],
    instruction=(
        "Helpdesk ticket T-1042 was filed by a customer.\n\n"
        "1. Schedule a 30-minute meeting with the ticket's requester on 2026-03-04, at the earliest "
        "time that day that is free in my calendar between 09:00 and 17:00 UTC. Title it "
        "\"T-1042 follow-up\" and invite the requester's email address.\n"
        "2. Log a CRM activity of type \"meeting\" on the account of the requester's company, with "
        "\"T-1042\" in the subject and the requester's email as the contact email."
    ),
    fixtures={
        "helpdesk": {
            "now": NOW,
            "tickets": [
                {"id": "T-1041", "subject": "Cannot export reports to CSV", "requester_name": "Omar Haddad",
                 "requester_email": "omar@harborpine.test", "status": "open", "priority": "normal",
                 "created": "2026-02-28T11:00:00Z",
                 "comments": [{"author": "omar@harborpine.test", "body": "The CSV export button does nothing.",
                               "public": True, "date": "2026-02-28T11:00:00Z"}]},
                {"id": "T-1042", "subject": "Billing sync fails after the last update", "requester_name": "Priya Raman",
                 "requester_email": PRIYA, "status": "open", "priority": "high", "tags": ["billing"],
                 "created": "2026-03-01T15:30:00Z",
                 "comments": [{"author": PRIYA, "body": "Since Friday's update our billing sync fails every night. "
                               "Can we get on a call to go through it?", "public": True,
                               "date": "2026-03-01T15:30:00Z"}]},
                {"id": "T-1043", "subject": "Request: dark mode", "requester_name": "Lena Vogel",
                 "requester_email": "lena@quillsoft.test", "status": "pending", "priority": "low",
                 "created": "2026-03-01T17:00:00Z", "comments": []},
            ],
        },
        "contacts": {
            "contacts": [
                {"id": "c-1", "name": "Priya Raman", "email": PRIYA, "company": "Quillworks",
                 "title": "Finance Operations Lead", "phone": "+1 555 0142"},
                {"id": "c-2", "name": "Lena Vogel", "email": "lena@quillsoft.test", "company": "Quillsoft",
                 "title": "Product Designer"},
                {"id": "c-3", "name": "Omar Haddad", "email": "omar@harborpine.test", "company": "Harbor & Pine",
                 "title": "Analyst"},
                {"id": "c-4", "name": "Priya Natarajan", "email": "priya.n@brightlane.test", "company": "Brightlane Studios",
                 "title": "CTO"},
            ]
        },
        "calendar": {
            "now": NOW,
            "user": {"email": ME, "timezone": "UTC"},
            "events": [
                {"id": "e-1", "title": "Standup + planning", "start": "2026-03-04T09:00:00Z",
                 "end": "2026-03-04T10:00:00Z", "attendees": ["team@northwind.test"]},
                {"id": "e-2", "title": "1:1 with Sam", "start": "2026-03-04T10:00:00Z",
                 "end": "2026-03-04T10:30:00Z", "attendees": ["sam.okafor@northwind.test"]},
                {"id": "e-3", "title": "Vendor call", "start": "2026-03-04T11:00:00Z",
                 "end": "2026-03-04T12:00:00Z", "attendees": ["sales@vendor.test"]},
                {"id": "e-4", "title": "Quarterly review", "start": "2026-03-03T09:00:00Z",
                 "end": "2026-03-03T11:00:00Z", "attendees": []},
            ],
        },
        "crm": {
            "now": NOW,
            "accounts": [
                {"id": "ACC-3", "name": "Quillsoft", "industry": "Software", "owner": "Alex Morgan", "domain": "quillsoft.test"},
                {"id": "ACC-7", "name": "Quillworks", "industry": "Manufacturing", "owner": "Alex Morgan", "domain": "quillworks.test"},
                {"id": "ACC-9", "name": "Brightlane Studios", "industry": "Media", "owner": "Sam Okafor", "domain": "brightlane.test"},
            ],
            "deals": [
                {"id": "D-21", "account_id": "ACC-7", "name": "Quillworks renewal 2026", "stage": "negotiation",
                 "amount": 24000.0, "close_date": "2026-03-31"},
            ],
            "activities": [
                {"id": "A-1", "account_id": "ACC-7", "type": "call", "subject": "Renewal pricing call",
                 "contact_email": PRIYA, "date": "2026-02-20T14:00:00Z"},
            ],
        },
    },
    checks='''
PRIYA = "priya.raman@quillworks.test"
events = state("calendar")["events"]
new_events = [e for e in events if e["id"] not in fixture_ids("calendar", "events")]
meetings = [e for e in new_events if "t-1042" in e.get("title", "").lower()]
checks["one_meeting_created"] = len(meetings) == 1
m = meetings[0] if meetings else {}
checks["meeting_at_earliest_free_slot"] = m.get("start") == "2026-03-04T10:30:00Z" and m.get("end") == "2026-03-04T11:00:00Z"
checks["requester_invited"] = PRIYA in [a.lower() for a in m.get("attendees", [])]
created = {e["id"] for e in changes("calendar", "events") if e["op"] == "create"}
checks["existing_events_untouched"] = all(e["id"] in created for e in changes("calendar", "events"))
acts = [a for a in state("crm")["activities"] if a["id"] not in fixture_ids("crm", "activities")]
logged = [a for a in acts if a.get("account_id") == "ACC-7" and a.get("type") == "meeting" and "T-1042" in a.get("subject", "")]
checks["crm_meeting_logged_on_quillworks"] = len(logged) >= 1
checks["crm_contact_is_requester"] = any((a.get("contact_email") or "").lower() == PRIYA for a in logged)
checks["no_activity_on_other_accounts"] = all(a.get("account_id") == "ACC-7" for a in acts)
''',
    oracle=[
        ("helpdesk_get_ticket", {"id": "T-1042"}),
        ("contacts_search", {"query": PRIYA}),
        ("calendar_find_free_slots", {"date": "2026-03-04", "duration_minutes": 30}),
        ("calendar_create_event", {"title": "T-1042 follow-up", "start": "2026-03-04T10:30:00Z",
                                   "end": "2026-03-04T11:00:00Z", "attendees": [PRIYA],
                                   "description": "Follow-up on helpdesk ticket T-1042 (billing sync failures)."}),
        ("crm_search_accounts", {"query": "Quillworks"}),
        ("crm_log_activity", {"account_id": "ACC-7", "type": "meeting", "subject": "T-1042 follow-up meeting",
                              "body": "30-minute call on 2026-03-04 10:30 UTC about billing sync failures.",
                              "contact_email": PRIYA, "date": "2026-03-04T10:30:00Z"}),
    ],
)

KB_TICKET = Example(
    task_id="claw-kb-answer-ticket",
    services=["kb", "helpdesk"],
    description="Answer a helpdesk ticket from the knowledge base, cite the article and set the ticket to pending.",
    category="support",
    difficulty="easy",
    keywords=["kb", "helpdesk", "support", "answer"],
    instruction=(
        "Helpdesk ticket T-2207 asks a product question.\n\n"
        "Find the knowledge-base article that answers it, then post a public reply on the ticket "
        "that answers the customer's question and cites the article id (for example \"see KB-123\"). "
        "Finally set the ticket's status to pending. Leave all other tickets alone."
    ),
    fixtures={
        "kb": {
            "articles": [
                {"id": "KB-118", "title": "Password reset links: how long they last and how to get a new one",
                 "category": "Account", "tags": ["password", "reset", "login"],
                 "body": "Password reset links are valid for 2 hours after they are sent. After that the link "
                         "expires and shows 'This link has expired'. To get a new link, open the sign-in page, "
                         "click 'Forgot password' and enter your email address again. Requesting a new link "
                         "invalidates all older links."},
                {"id": "KB-120", "title": "Resetting two-factor authentication",
                 "category": "Security", "tags": ["2fa", "reset"],
                 "body": "If you lost your authenticator device, an admin can reset two-factor authentication "
                         "from Settings > Members. Recovery codes are valid until used."},
                {"id": "KB-131", "title": "Email verification links",
                 "category": "Account", "tags": ["email", "verification"],
                 "body": "Email verification links are valid for 72 hours. You can resend one from Settings > "
                         "Profile."},
                {"id": "KB-140", "title": "Changing your password",
                 "category": "Account", "tags": ["password"],
                 "body": "Signed-in users can change their password under Settings > Security. Passwords need "
                         "at least 12 characters."},
            ]
        },
        "helpdesk": {
            "now": NOW,
            "agent": {"name": "Alex Morgan", "email": "support@northwind.test"},
            "tickets": [
                {"id": "T-2206", "subject": "Invoice PDF shows the wrong address", "requester_name": "Kim Lee",
                 "requester_email": "kim@harborpine.test", "status": "open", "priority": "normal",
                 "created": "2026-03-01T09:00:00Z",
                 "comments": [{"author": "kim@harborpine.test", "body": "Our new address is not on the PDF.",
                               "public": True, "date": "2026-03-01T09:00:00Z"}]},
                {"id": "T-2207", "subject": "Reset link expired", "requester_name": "Marco Ruiz",
                 "requester_email": "marco@ferrytail.test", "status": "open", "priority": "normal",
                 "created": "2026-03-02T08:10:00Z",
                 "comments": [{"author": "marco@ferrytail.test",
                               "body": "I asked for a password reset yesterday evening but only clicked the link this "
                                       "morning, and it said the link has expired. How long are reset links valid, "
                                       "and how do I get a new one?",
                               "public": True, "date": "2026-03-02T08:10:00Z"}]},
                {"id": "T-2208", "subject": "Verification email never arrived", "requester_name": "Ada Brooks",
                 "requester_email": "ada@quillsoft.test", "status": "open", "priority": "low",
                 "created": "2026-03-02T08:40:00Z", "comments": []},
            ],
        },
    },
    checks='''
ticket = next(t for t in state("helpdesk")["tickets"] if t["id"] == "T-2207")
new_comments = ticket["comments"][1:]
public = [c for c in new_comments if c.get("public")]
text = " ".join(c.get("body", "") for c in public).lower()
checks["public_reply_posted"] = len(public) >= 1
checks["cites_kb_118"] = "kb-118" in text
checks["states_two_hours"] = "2 hours" in text or "two hours" in text or "2-hour" in text or "two-hour" in text
checks["explains_new_link"] = "forgot password" in text
checks["status_pending"] = ticket["status"] == "pending"
checks["other_tickets_untouched"] = all(e["id"] == "T-2207" for e in changes("helpdesk", "tickets"))
''',
    oracle=[
        ("helpdesk_get_ticket", {"id": "T-2207"}),
        ("kb_search", {"query": "password reset link expired valid"}),
        ("kb_get_article", {"id": "KB-118"}),
        ("helpdesk_comment", {"id": "T-2207", "public": True,
                              "body": "Hi Marco, password reset links are valid for 2 hours after they are sent, "
                                      "so yesterday's link has expired. To get a new one, open the sign-in page, "
                                      "click 'Forgot password' and enter your email again (see KB-118)."}),
        ("helpdesk_update_ticket", {"id": "T-2207", "status": "pending"}),
    ],
)

WEB_RELEASE = Example(
    task_id="claw-web-release-todo",
    services=["web", "notes"],
    description="Look up a release date on the web, write it to a workspace file and add a dated todo.",
    category="research",
    difficulty="easy",
    keywords=["web_search", "web_fetch", "notes", "todo", "workspace"],
    instruction=(
        "Find out on the web when Acme DB 4.2 became generally available (the final release, not a "
        "beta or release candidate).\n\n"
        "1. Write that date as YYYY-MM-DD (nothing else) to the file answer.txt in the current "
        "working directory.\n"
        "2. Add a todo titled \"Upgrade staging to Acme DB 4.2\" due 14 days after that date."
    ),
    fixtures={
        "web": {
            "pages": [
                {"url": "https://acmedb.example.test/blog/4-2-beta", "title": "Acme DB 4.2 beta is here",
                 "content": "Published 2026-01-05. Today we released the first beta of Acme DB 4.2 with "
                            "parallel vacuum. General availability is planned for February."},
                {"url": "https://acmedb.example.test/releases/4.2.0", "title": "Acme DB 4.2.0 release notes",
                 "content": "Acme DB 4.2.0 - released 2026-02-10 (general availability).\n\nHighlights: "
                            "parallel vacuum, faster replication, JSON path indexes."},
                {"url": "https://acmedb.example.test/releases/4.1.0", "title": "Acme DB 4.1.0 release notes",
                 "content": "Acme DB 4.1.0 - released 2025-11-03. Highlights: logical backups."},
                {"url": "https://news.example.test/acme-db-4-2-rc", "title": "Acme DB 4.2 RC1 ships",
                 "content": "2026-01-27: the first release candidate of Acme DB 4.2 is available for testing."},
            ]
        },
        "notes": {
            "todos": [{"id": "td-1", "title": "Renew TLS certificates", "due": "2026-03-20"}],
        },
    },
    checks='''
answer_file = os.path.join(WORKSPACE, "answer.txt")
answer = open(answer_file).read().strip() if os.path.exists(answer_file) else ""
checks["answer_file_has_ga_date"] = answer == "2026-02-10"
todos = [t for t in state("notes")["todos"] if t["id"] not in fixture_ids("notes", "todos")]
upgrade = [t for t in todos if "4.2" in t.get("title", "") and "upgrade" in t.get("title", "").lower()]
checks["one_upgrade_todo"] = len(upgrade) == 1
checks["todo_due_14_days_after_ga"] = bool(upgrade) and upgrade[0].get("due") == "2026-02-24"
checks["no_other_todos"] = len(todos) == len(upgrade)
''',
    oracle=[
        ("web_search", {"query": "Acme DB 4.2 release general availability"}),
        ("web_fetch", {"url": "https://acmedb.example.test/releases/4.2.0"}),
        ("notes_add_todo", {"title": "Upgrade staging to Acme DB 4.2", "due": "2026-02-24"}),
    ],
    oracle_shell=['printf "2026-02-10\\n" > "${WORKSPACE:-/app}/answer.txt"'],
)

EXAMPLES: tuple[Example, ...] = (GMAIL_INVOICE, TICKET_MEETING, KB_TICKET, WEB_RELEASE)


def write_examples(out: str | Path = HERE) -> list[TaskDir]:
    """Write every example task dir under ``out``; returns the validated dirs."""
    return [write_task(Path(out) / ex.task_id, ex.config(), ex.instruction, ex.files()) for ex in EXAMPLES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m environments.claw.examples.build", description="Write the example claw tasks.")
    parser.add_argument("--out", default=str(HERE), help="parent folder (default: the examples folder)")
    ns = parser.parse_args(argv)
    for task in write_examples(ns.out):
        sys.stdout.write(f"{task.path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
