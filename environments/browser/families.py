"""Procedural browser-use task families on the mock websites.

Each family is ``(rng, difficulty) -> BrowserTask``: seeded site fixtures, a varied
instruction, an oracle plan of Table A3 actions (pointer actions name a CSS ``target``;
:mod:`environments.browser.replay` turns it into coordinates and runs it through the
harness's executor) and verifier checks over the site state / the agent's answer. The
difficulty knob scales the distractors (similar products, flights, threads, pages).
:func:`generate` makes (family, seed, difficulty) deterministic; the synthesis
``procedural`` backend registers these families for the ``browser-use`` domain.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from environments.browser.sites import shop as shop_site
from environments.browser.taskgen import task_config, task_files
from environments.family_registry import Difficulty, FamilyRegistry, FamilyTask
from environments.taskdir import TaskConfig

_SCALE = {"easy": 0, "medium": 1, "hard": 2}
AGENT_TIMEOUT = {"easy": 600.0, "medium": 750.0, "hard": 900.0}


@dataclass
class BrowserTask(FamilyTask):
    """A fully specified browser task from one (family, seed, difficulty)."""

    name_prefix: ClassVar[str] = "browser"

    sites: list[str]
    fixtures: dict[str, dict[str, Any]]
    start_url: str
    actions: list[dict[str, Any]]
    checks_code: str
    keywords: list[str] = field(default_factory=list)

    @property
    def checks(self) -> str:
        """The verifier's check code (the attribute the synthesis backend's generic code reads)."""
        return self.checks_code

    @property
    def services(self) -> list[str]:
        """The sites, under the name task.toml and the synthesis backend use."""
        return self.sites

    def files(self) -> dict[str, str | bytes]:
        return task_files(name=self.name, sites=self.sites, fixtures=self.fixtures, start_url=self.start_url,
                          actions=self.actions, checks_code=self.checks_code)

    def config(self, *, purpose: str = "rl", run_id: str | None = None, proposer: str = "procedural") -> TaskConfig:
        return task_config(name=self.name, title=self.title, category=self.category, difficulty=self.difficulty,
                           sites=self.sites, keywords=self.keywords, purpose=purpose, run_id=run_id, proposer=proposer,
                           extra_metadata={"family": self.family, "seed": self.seed},
                           agent_timeout=AGENT_TIMEOUT[self.difficulty])

    # the synthesis ``procedural`` backend renders tasks of other domains through these two
    task_config = config
    task_files = files


Family = Callable[[random.Random, Difficulty], BrowserTask]
_REGISTRY: FamilyRegistry[BrowserTask] = FamilyRegistry("browser")  # seeded as synthesis.procedural seeds
FAMILIES: dict[str, Family] = _REGISTRY.families
FAMILY_SITES: dict[str, list[str]] = {}
generate = _REGISTRY.generate


def family(name: str, sites: list[str]) -> Callable[[Family], Family]:
    def deco(fn: Family) -> Family:
        FAMILY_SITES[name] = sites
        return _REGISTRY.register(name, fn)

    return deco


def _task(category: str, title: str, instruction: str, sites: list[str], fixtures: dict, start_url: str,
          actions: list[dict[str, Any]], checks_code: str, keywords: list[str]) -> BrowserTask:
    return BrowserTask(family="", seed=0, difficulty="easy", category=category, title=title,
                       instruction=instruction.strip(), sites=sites, fixtures=fixtures, start_url=start_url,
                       actions=actions, checks_code=checks_code, keywords=keywords)


# ── oracle plan helpers ──────────────────────────────────────────────────────────────
def click(target: str, **kw: Any) -> dict[str, Any]:
    return {"action": "click", "target": target, **kw}


def fill(target: str, text: str) -> list[dict[str, Any]]:
    """Click a field, select what is in it, type ``text`` (replaces a default value)."""
    return [click(target), {"action": "key", "keys": "Control+a"}, {"action": "type", "text": text}]


def goto(url: str) -> dict[str, Any]:
    return {"action": "goto", "url": url}


DONE = {"action": "terminate", "status": "success"}

# ── random material ──────────────────────────────────────────────────────────────────
FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Gita", "Hugo", "Ines", "Jon", "Kira", "Luca", "Mona", "Nils",
         "Omar", "Priya", "Rosa", "Sven", "Tara", "Yuki"]
LAST = ["Park", "Silva", "Okafor", "Novak", "Haddad", "Berg", "Ito", "Costa", "Meyer", "Rossi", "Khan", "Lopez",
        "Moreau", "Nakamura", "Olsen", "Quinn"]
STREETS = ["Maple Avenue", "Harbor Road", "Station Street", "Elm Court", "Mill Lane", "Park Terrace", "Canal Way"]
CITIES = ["Lisbon", "Berlin", "Oslo", "Vienna", "Dublin", "Prague", "Madrid", "Zurich", "Warsaw", "Athens", "Helsinki"]
BRANDS = ["Aurora", "Nimbus", "Trailblazer", "Summit", "Harbor", "Ember", "Cobalt", "Juniper", "Vertex", "Orchid",
          "Basalt", "Meridian", "Solstice", "Tundra", "Zephyr", "Quartz"]
PRODUCT_KINDS = {
    "Electronics": ["Wireless Mouse", "Mechanical Keyboard", "USB-C Hub", "Noise-Cancelling Headphones", "Webcam",
                    "Bluetooth Speaker"],
    "Outdoors": ["Water Bottle", "Daypack", "Camping Lantern", "Trekking Poles", "Sleeping Bag", "Rain Jacket"],
    "Kitchen": ["Ceramic Mug", "Pour-Over Kettle", "Chef Knife", "Cutting Board", "Spice Grinder", "French Press"],
    "Home": ["Desk Lamp", "Throw Blanket", "Wall Clock", "Plant Pot", "Bookend Set", "Scented Candle"],
}
AIRLINES = [("Bluejet", "BJ"), ("Aerolina", "AL"), ("Northstar", "NS"), ("Skyhop", "SH"), ("Vantair", "VA")]


def person(rng: random.Random) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return f"{first} {last}", f"{first.lower()}.{last.lower()}@example.test"


def _catalog(rng: random.Random, n: int, kind: str | None = None, category: str | None = None) -> list[dict[str, Any]]:
    """``n`` products with unique names; with ``kind`` all of that kind (different brands)."""
    brands = rng.sample(BRANDS, k=min(n, len(BRANDS)))
    out = []
    for i in range(n):
        cat = category or rng.choice(sorted(PRODUCT_KINDS))
        k = kind or rng.choice(PRODUCT_KINDS[cat])
        name = f"{brands[i % len(brands)]} {k}" + ("" if i < len(brands) else f" {i}")
        out.append({"id": f"p{i + 1}", "name": name, "category": cat, "price": round(rng.uniform(9, 240), 2),
                    "rating": round(rng.uniform(3.0, 4.9), 1), "reviews": rng.randrange(3, 900),
                    "description": f"The {name} from our {cat.lower()} range.",
                    "specs": {"Brand": name.split()[0], "Warranty": f"{rng.choice([1, 2, 3])} years"}})
    return out


def _shop_fixture(products: list[dict[str, Any]]) -> dict[str, Any]:
    return {"user": {"name": "Alex Doe"}, "products": products, "shipping": shop_site.default_shipping(),
            "cart": [], "orders": []}


# 1 ─────────────────────────────────────────────────────────────── shop: buy a product
@family("shop-purchase", ["shop"])
def shop_purchase(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    cat = rng.choice(sorted(PRODUCT_KINDS))
    kind = rng.choice(PRODUCT_KINDS[cat])
    similar = _catalog(rng, 2 + 2 * _SCALE[difficulty], kind=kind, category=cat)  # same kind, other brands
    others = _catalog(random.Random(rng.random()), 4 + 2 * _SCALE[difficulty])
    products = similar + [p for p in others if p["name"] not in {s["name"] for s in similar}]
    for i, p in enumerate(products):
        p["id"] = f"p{i + 1}"
    rng.shuffle(products)
    target = rng.choice(similar)
    qty = rng.choice([1, 1, 2, 3]) if difficulty != "easy" else 1
    ship = rng.choice(shop_site.default_shipping())
    name, _ = person(rng)
    address = f"{rng.randrange(1, 240)} {rng.choice(STREETS)}"
    city, zip_code = rng.choice(CITIES), str(rng.randrange(10000, 99999))
    count = "one" if qty == 1 else str(qty)
    instruction = rng.choice([
        (f"On http://shop.test/ buy {count} “{target['name']}” and have it shipped with {ship['label'].split(' (')[0]} "
         f"shipping to {name}, {address}, {city}, ZIP {zip_code}."),
        (f"Order {count} of the {target['name']} from the Northwind Market web shop (http://shop.test/). "
         f"Ship to {name} at {address}, {city} {zip_code}; use the {ship['label'].split(' (')[0].lower()} shipping option."),
    ])
    actions = [goto("http://shop.test/"), *fill("input[name=q]", target["name"]), {"action": "key", "keys": "Enter"},
               click(f"a[data-product='{target['id']}']")]
    if qty > 1:
        actions += fill("#qty", str(qty))
    actions += [click("#add-to-cart"), click("#checkout"), *fill("#name", name), *fill("#address", address),
                *fill("#city", city), *fill("#zip", zip_code), click(f"#ship-{ship['id']}"), click("#place-order"), DONE]
    checks = f"""
orders = state("shop")["orders"]
checks["one_order_placed"] = len(orders) == 1
o = orders[0] if orders else {{}}
items = [(i["product_id"], i["qty"]) for i in o.get("items", [])]
checks["right_product_and_quantity"] = items == [({target['id']!r}, {qty})]
checks["shipping_{ship['id']}"] = o.get("shipping") == {ship['id']!r}
checks["recipient"] = norm(o.get("name", "")) == norm({name!r})
checks["address"] = norm(o.get("address", "")) == norm({address!r}) and norm(o.get("city", "")) == norm({city!r})
checks["zip"] = o.get("zip", "").strip() == {zip_code!r}
"""
    return _task("shopping", f"Buy {target['name']}", instruction, ["shop"], {"shop": _shop_fixture(products)},
                 "http://shop.test/", actions, checks, ["shop", "purchase", "checkout", "form"])


# 2 ─────────────────────────────────────────────────────────────── shop: compare and answer
@family("shop-compare-answer", ["shop"])
def shop_compare(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    cat = rng.choice(sorted(PRODUCT_KINDS))
    kind = rng.choice(PRODUCT_KINDS[cat])
    candidates = _catalog(rng, 3 + _SCALE[difficulty] * 2, kind=kind, category=cat)
    others = [p for p in _catalog(random.Random(rng.random()), 5) if kind not in p["name"]]
    products = candidates + others
    for i, p in enumerate(products):
        p["id"] = f"p{i + 1}"
    criterion = rng.choice(["cheapest", "best rated"])
    if criterion == "cheapest":
        prices = rng.sample(range(15, 220), k=len(candidates))
        for p, price in zip(candidates, prices):
            p["price"] = float(price) + 0.99
        target = min(candidates, key=lambda p: p["price"])
    else:
        ratings = rng.sample([x / 10 for x in range(30, 50)], k=len(candidates))
        for p, r in zip(candidates, ratings):
            p["rating"] = r
        target = max(candidates, key=lambda p: p["rating"])
    rng.shuffle(products)
    noun = kind.lower()
    instruction = rng.choice([
        f"Which {noun} sold on http://shop.test/ is the {criterion}? Answer with its full product name.",
        (f"I'm shopping for a {noun} on the Northwind Market site (http://shop.test/). Find the {criterion} one "
         f"and tell me its exact product name. Don't buy anything."),
    ])
    actions = [goto("http://shop.test/"), *fill("input[name=q]", kind), {"action": "key", "keys": "Enter"},
               {"action": "answer", "text": target["name"]}]
    rivals = [p["name"] for p in candidates if p is not target]
    checks = f"""
text = norm(answer())
checks["answered"] = bool(text)
checks["names_the_{criterion.replace(' ', '_')}"] = norm({target['name']!r}) in text
checks["no_other_candidate_named"] = not any(norm(r) in text for r in {rivals!r})
checks["nothing_ordered"] = state("shop")["orders"] == []
"""
    return _task("shopping", f"Find the {criterion} {noun}", instruction, ["shop"], {"shop": _shop_fixture(products)},
                 "http://shop.test/", actions, checks, ["shop", "compare", "answer", "search"])


# 3 ─────────────────────────────────────────────────────────────── travel: book a flight
@family("travel-booking", ["travel"])
def travel_booking(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    origin, dest = rng.sample(CITIES, 2)
    day = f"2026-{rng.randrange(4, 10):02d}-{rng.randrange(1, 28):02d}"
    flights = []
    n_route = 3 + 2 * _SCALE[difficulty]
    for i in range(n_route):
        airline, code = rng.choice(AIRLINES)
        hour = 6 + (i * 14 // n_route)
        dur = rng.randrange(2, 6)
        flights.append({"id": f"f{i + 1}", "airline": airline, "number": f"{code} {rng.randrange(100, 999)}",
                        "from": origin, "to": dest, "date": day, "depart": f"{hour:02d}:{rng.choice(['05', '20', '45'])}",
                        "arrive": f"{hour + dur:02d}:{rng.choice(['00', '30', '50'])}", "stops": rng.choice([0, 0, 1]),
                        "price": float(rng.randrange(60, 420)), "seats_left": rng.randrange(2, 30)})
    flights[0]["stops"] = 0  # at least one nonstop
    # distractors: other dates and the reverse route, some cheaper
    for j in range(2 + 2 * _SCALE[difficulty]):
        airline, code = rng.choice(AIRLINES)
        other_day = day
        while other_day == day:
            other_day = f"2026-{rng.randrange(4, 10):02d}-{rng.randrange(1, 28):02d}"
        frm, to = (dest, origin) if j % 2 else (origin, dest)
        flights.append({"id": f"f{n_route + j + 1}", "airline": airline, "number": f"{code} {rng.randrange(100, 999)}",
                        "from": frm, "to": to, "date": other_day if frm == origin else day, "depart": "09:10",
                        "arrive": "12:40", "stops": 0, "price": float(rng.randrange(30, 90)), "seats_left": 5})
    nonstop = [f for f in flights[:n_route] if f["stops"] == 0]
    target = min(nonstop, key=lambda f: (f["price"], f["depart"]))
    for f in nonstop:  # unique cheapest
        if f is not target and f["price"] == target["price"]:
            f["price"] += 7
    cabin = rng.choice(["economy", "premium", "business"]) if difficulty != "easy" else "economy"
    bags = rng.choice([0, 1, 2]) if difficulty == "hard" else 0
    passenger, email = person(rng)
    extras = f", {cabin} cabin" + (f", {bags} checked bag{'s' if bags != 1 else ''}" if bags else "")
    instruction = rng.choice([
        (f"On http://travel.test/ book the cheapest nonstop flight from {origin} to {dest} on {day} for {passenger} "
         f"(email {email}){extras}."),
        (f"Use SkyLark Travel (http://travel.test/) to book {passenger} ({email}) on the cheapest direct flight "
         f"{origin} → {dest} departing {day}{extras}."),
    ])
    actions = [goto("http://travel.test/"), *fill("#from", origin), *fill("#to", dest), *fill("#date", day),
               click("#search-flights"), click(f"a[data-flight='{target['id']}']"), *fill("#passenger", passenger),
               *fill("#email", email), click(f"#cabin-{cabin}")]
    if bags:
        actions += fill("#bags", str(bags))
    actions += [click("#confirm-booking"), DONE]
    checks = f"""
bookings = state("travel")["bookings"]
checks["one_booking"] = len(bookings) == 1
b = bookings[0] if bookings else {{}}
checks["cheapest_nonstop_flight"] = b.get("flight_id") == {target['id']!r}
checks["passenger"] = norm(b.get("passenger", "")) == norm({passenger!r})
checks["email"] = norm(b.get("email", "")) == norm({email!r})
checks["cabin_{cabin}"] = b.get("cabin") == {cabin!r}
checks["bags"] = b.get("bags") == {bags}
"""
    return _task("travel", f"Book {origin} to {dest}", instruction, ["travel"], {"travel": {"flights": flights, "bookings": []}},
                 "http://travel.test/", actions, checks, ["travel", "booking", "form", "compare"])


# forum material
BOARDS = [("general", "General", "Introductions and anything else."),
          ("hardware", "Hardware", "Soldering, boards, sensors."),
          ("software", "Software", "Firmware, tooling and code."),
          ("events", "Events", "Meetups and workshops."),
          ("market", "Marketplace", "Buy, sell and swap parts.")]
TOPICS = ["Best budget oscilloscope?", "ESP32 deep sleep current", "Workshop: intro to KiCad", "Selling spare servos",
          "3D printer bed leveling tips", "Raspberry Pi cluster build log", "Which soldering flux?",
          "Monthly meetup venue", "Rust on microcontrollers", "Battery pack safety", "Cheap logic analyzers",
          "Laser cutter access hours"]
USERS = ["mkoch", "lena_v", "circuit_sam", "pbj", "tinker_tom", "ada_l", "rgb_rita", "volt"]


def _forum(rng: random.Random, n_threads: int) -> dict[str, Any]:
    titles = rng.sample(TOPICS, k=min(n_threads, len(TOPICS)))
    threads = []
    for i, title in enumerate(titles):
        board = rng.choice(BOARDS)[0]
        author = rng.choice(USERS)
        posts = [{"id": f"t{i + 1}-p{j + 1}", "author": author if j == 0 else rng.choice(USERS),
                 "body": f"{'Question' if j == 0 else 'Reply'} about {title.lower()} #{j + 1}."}
                for j in range(rng.randrange(1, 4))]
        threads.append({"id": f"t{i + 1}", "board": board, "title": title, "author": author, "posts": posts})
    return {"user": {"name": "alex_d"},
            "boards": [{"id": b, "name": n, "description": d} for b, n, d in BOARDS], "threads": threads}


# 4 ─────────────────────────────────────────────────────────────── forum: reply in a thread
@family("forum-reply", ["forum"])
def forum_reply(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    data = _forum(rng, 4 + 3 * _SCALE[difficulty])
    target = rng.choice(data["threads"])
    board = next(b for b in data["boards"] if b["id"] == target["board"])
    code = f"{rng.choice(['R', 'LAB', 'B'])}-{rng.randrange(100, 999)}"
    when = rng.choice(["Thursday at 18:00", "Saturday at 10:30", "Tuesday at 19:15", "Friday at 17:45"])
    text = f"Count me in! I can host it in room {code} on {when}."
    instruction = rng.choice([
        (f"On the Tinkerers' Forum (http://forum.test/), reply to the thread “{target['title']}” in the {board['name']} "
         f"board saying that you can host it in room {code} on {when}."),
        (f"Post a reply in the forum thread “{target['title']}” (http://forum.test/, board {board['name']}): tell them "
         f"room {code} is available on {when}."),
    ])
    actions = [goto("http://forum.test/"), click(f"a[data-board='{board['id']}']"),
               click(f"a[data-thread='{target['id']}']"), click("#body"), {"action": "type", "text": text},
               click("#post-reply"), DONE]
    before = {t["id"]: len(t["posts"]) for t in data["threads"]}
    checks = f"""
threads = {{t["id"]: t for t in state("forum")["threads"]}}
before = {before!r}
mine = [p for p in threads[{target['id']!r}]["posts"][before[{target['id']!r}]:] if p.get("author") == "alex_d"]
checks["replied_in_thread"] = len(mine) >= 1
body = norm(" ".join(p.get("body", "") for p in mine))
checks["mentions_room"] = norm({code!r}) in body
checks["mentions_day"] = norm({when.split(' at ')[0]!r}) in body
checks["no_other_thread_touched"] = all(len(t["posts"]) == before.get(tid, -1) for tid, t in threads.items() if tid != {target['id']!r})
"""
    return _task("forum", f"Reply to {target['title']}", instruction, ["forum"], {"forum": data}, "http://forum.test/",
                 actions, checks, ["forum", "reply", "post", "navigation"])


# 5 ─────────────────────────────────────────────────────────────── forum: start a thread
@family("forum-new-thread", ["forum"])
def forum_new_thread(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    data = _forum(rng, 3 + 2 * _SCALE[difficulty])
    bid, bname, _ = rng.choice(BOARDS)
    item = rng.choice(["bench power supply", "hot air station", "logic analyzer", "CNC router bits", "stepper drivers"])
    price = rng.randrange(15, 180)
    title = rng.choice([f"For sale: {item}", f"Swap: {item}", f"WTS {item}"])
    body = f"Selling my {item} for {price} EUR, pick-up in the lab."
    instruction = rng.choice([
        (f"On http://forum.test/ start a new thread in the {bname} board titled “{title}”. In the message say you sell "
         f"your {item} for {price} EUR."),
        (f"Create a forum post (Tinkerers' Forum, http://forum.test/, board {bname}) with the title “{title}” offering "
         f"the {item} for {price} EUR."),
    ])
    actions = [goto("http://forum.test/"), click("header nav a[href='/new']"), click(f"#board-{bid}"),
               click("#title"), {"action": "type", "text": title}, click("#body"), {"action": "type", "text": body},
               click("#create-thread"), DONE]
    known = [t["id"] for t in data["threads"]]
    checks = f"""
new = [t for t in state("forum")["threads"] if t["id"] not in {known!r}]
checks["one_new_thread"] = len(new) == 1
t = new[0] if new else {{"posts": []}}
checks["in_board_{bid}"] = t.get("board") == {bid!r}
checks["title"] = norm(t.get("title", "")) == norm({title!r})
msg = norm(t["posts"][0]["body"]) if t["posts"] else ""
checks["message_mentions_item_and_price"] = norm({item!r}) in msg and {str(price)!r} in msg
"""
    return _task("forum", f"New thread: {title}", instruction, ["forum"], {"forum": data}, "http://forum.test/",
                 actions, checks, ["forum", "post", "form"])


# docs material
PRODUCTS = ["Quill", "Lattice", "Beacon", "Fathom", "Cinder", "Orbit"]
DOC_PAGES = {
    "server": ("Server configuration", "Reference", [("port", ["8080", "9000", "7443"], "TCP port the server listens on."),
                                                     ("workers", ["4", "8", "16"], "Worker processes."),
                                                     ("request_timeout", ["30s", "45s", "60s"], "Time limit per request."),
                                                     ("max_body_size", ["10MB", "25MB", "64MB"], "Largest accepted request body.")]),
    "cache": ("Caching", "Reference", [("cache_ttl", ["300", "600", "900"], "Seconds an entry stays fresh."),
                                       ("cache_size", ["512MB", "1GB", "2GB"], "Memory budget of the cache."),
                                       ("eviction", ["lru", "lfu", "fifo"], "Eviction policy.")]),
    "auth": ("Authentication", "Security", [("token_lifetime", ["15m", "1h", "12h"], "How long access tokens live."),
                                            ("max_login_attempts", ["3", "5", "10"], "Failed logins before lockout."),
                                            ("password_min_length", ["8", "12", "14"], "Minimum password length.")]),
    "logging": ("Logging", "Operations", [("log_level", ["info", "warning", "debug"], "Verbosity of the logs."),
                                          ("log_rotation", ["daily", "weekly", "100MB"], "When log files rotate."),
                                          ("log_retention_days", ["7", "14", "30"], "Days rotated logs are kept.")]),
    "backup": ("Backups", "Operations", [("backup_interval", ["6h", "12h", "24h"], "Time between snapshots."),
                                         ("backup_keep", ["7", "14", "28"], "Snapshots kept."),
                                         ("backup_compression", ["zstd", "gzip", "none"], "Snapshot compression.")]),
}


# 6 ─────────────────────────────────────────────────────────────── docs: look up and answer
@family("docs-lookup", ["docs"])
def docs_lookup(rng: random.Random, difficulty: Difficulty) -> BrowserTask:
    product = rng.choice(PRODUCTS)
    slugs = rng.sample(sorted(DOC_PAGES), k=2 + _SCALE[difficulty] + 1)
    pages = [{"slug": "install", "title": "Installation", "section": "Getting started",
              "intro": f"Install {product} and start it for the first time.", "options": [],
              "body": f"Download the {product} package for your platform.\n\nRun the installer and start the service."}]
    values: dict[str, dict[str, str]] = {}
    for slug in slugs:
        title, section, opts = DOC_PAGES[slug]
        chosen = {name: rng.choice(vals) for name, vals, _ in opts}
        values[slug] = chosen
        pages.append({"slug": slug, "title": title, "section": section,
                      "intro": f"{title} settings of {product}.",
                      "options": [{"name": n, "default": chosen[n], "description": d} for n, _, d in opts],
                      "body": f"Edit these in {product.lower()}.toml and restart {product}."})
    slug = rng.choice(slugs)
    title, _, opts = DOC_PAGES[slug]
    option, _, desc = rng.choice(opts)
    value = values[slug][option]
    instruction = rng.choice([
        (f"According to the {product} documentation at http://docs.test/, what is the default value of the "
         f"`{option}` option? Answer with the value."),
        (f"Look up in the {product} docs (http://docs.test/) the default of `{option}` ({desc[:-1].lower()}) and reply "
         f"with it."),
    ])
    actions = [goto("http://docs.test/"), *fill("input[name=q]", option), {"action": "key", "keys": "Enter"},
               click(f"a[data-page='{slug}']"), {"action": "answer", "text": value}]
    wrong = sorted({v for vals in values.values() for v in vals.values()} - {value})
    checks = f"""
import re
text = norm(answer())
def said(v):
    return re.search(r"(?<![\\w.])" + re.escape(norm(v)) + r"(?![\\w])", text) is not None
checks["answered"] = bool(text)
checks["right_value"] = said({value!r})
checks["no_wrong_value"] = not any(said(v) for v in {wrong!r})
"""
    return _task("lookup", f"{product}: default of {option}", instruction, ["docs"],
                 {"docs": {"product": product, "pages": pages}}, "http://docs.test/", actions, checks,
                 ["docs", "lookup", "answer", "search"])
