"""Seeded random fixture material for claw tasks: people, companies, topics, times.

Everything is drawn from a ``random.Random`` passed in, so a (family, seed) pair always
yields the same mailbox, calendar, CRM records, tickets and KB articles.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

FIRST = [
    "Dana", "Ravi", "Mei", "Tomasz", "Aisha", "Lukas", "Sofia", "Kenji", "Priya", "Omar",
    "Elena", "Jonas", "Fatima", "Marco", "Ingrid", "Chidi", "Hana", "Mateo", "Zara", "Felix",
    "Nadia", "Arjun", "Lena", "Diego", "Yuki", "Amara", "Pavel", "Rosa", "Idris", "Clara",
]
LAST = [
    "Okafor", "Lindqvist", "Tanaka", "Moreau", "Kowalski", "Haddad", "Fischer", "Silva",
    "Nakamura", "Patel", "Novak", "Costa", "Brennan", "Yilmaz", "Andersen", "Mensah",
    "Romero", "Schmidt", "Iyer", "Dubois", "Kim", "Larsen", "Ferreira", "Horvat",
]
COMPANIES = [
    ("Northwind Logistics", "logistics"), ("Bluepeak Analytics", "software"),
    ("Harbor & Pine Legal", "legal"), ("Cedar Health Partners", "healthcare"),
    ("Quantum Bakery Co", "food"), ("Ironleaf Manufacturing", "manufacturing"),
    ("Solstice Energy", "energy"), ("Marlow Retail Group", "retail"),
    ("Vantage Learning", "education"), ("Copperline Telecom", "telecom"),
    ("Greenfield Farms", "agriculture"), ("Atlas Freight", "logistics"),
    ("Lumen Studios", "media"), ("Brightwater Hotels", "hospitality"),
    ("Kestrel Robotics", "hardware"), ("Orchid Pharma", "pharma"),
]
PRODUCTS = [
    "data export", "single sign-on", "invoice PDF", "mobile app login", "webhook delivery",
    "CSV import", "password reset", "two-factor auth", "billing portal", "report scheduler",
    "API rate limit", "calendar sync", "email notifications", "user provisioning",
]
PROBLEMS = [
    "fails with a timeout", "shows a blank page", "returns error 500", "is very slow",
    "sends duplicate messages", "rejects valid input", "loses the last change",
]
MEETING_TOPICS = [
    "quarterly review", "contract renewal", "onboarding kickoff", "roadmap sync",
    "budget planning", "security audit", "vendor evaluation", "launch retrospective",
    "pricing discussion", "hiring panel", "design critique", "incident postmortem",
]
PROJECTS = ["Aurora", "Basalt", "Cobalt", "Delta", "Ember", "Fjord", "Granite", "Helix", "Indigo", "Juniper"]
CITIES = ["Lisbon", "Osaka", "Toronto", "Nairobi", "Krakow", "Austin", "Oslo", "Lyon", "Pune", "Porto"]

USER_EMAIL = "me@acme.test"
USER_NAME = "Alex Doe"
#: The service clock every generated fixture uses (Monday).
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    company: str
    domain: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def email(self) -> str:
        return f"{self.first.lower()}.{self.last.lower()}@{self.domain}"


def slug(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())[:20]


def company(rng: random.Random) -> tuple[str, str, str]:
    """(name, industry, email domain)."""
    name, industry = rng.choice(COMPANIES)
    return name, industry, f"{slug(name.split()[0])}.test"


def people(rng: random.Random, n: int, companies: int = 3) -> list[Person]:
    """``n`` distinct people spread over a few companies."""
    comps = rng.sample(COMPANIES, k=min(companies, len(COMPANIES)))
    names = set()
    out: list[Person] = []
    while len(out) < n:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if (first, last) in names:
            continue
        names.add((first, last))
        cname, _ = rng.choice(comps)
        out.append(Person(first, last, cname, f"{slug(cname.split()[0])}.test"))
    return out


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(offset_days: int) -> datetime:
    """Midnight UTC ``offset_days`` after the service clock's date."""
    return NOW.replace(hour=0) + timedelta(days=offset_days)


def weekday_name(dt: datetime) -> str:
    return dt.strftime("%A")


def human_date(dt: datetime) -> str:
    return f"{dt.strftime('%A')}, {dt.strftime('%B')} {dt.day}"


def code(rng: random.Random, prefix: str, digits: int = 4) -> str:
    return f"{prefix}-{rng.randrange(10 ** (digits - 1), 10 ** digits)}"


def pick(rng: random.Random, options: list[str]) -> str:
    return rng.choice(options)
