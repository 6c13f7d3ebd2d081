"""``travel.test``: a flight booking site — search by origin, destination and date, pick a
flight from the results, fill in the passenger form, get a booking reference.

Fixture: ``{"flights": [{"id", "airline", "number", "from", "to", "date" (YYYY-MM-DD),
"depart", "arrive" (HH:MM), "stops", "price", "seats_left"}], "bookings": [...]}``. A
booking is ``{"id" (reference), "flight_id", "passenger", "email", "cabin"
("economy"|"premium"|"business"), "bags", "price", "status": "confirmed"}``; events:
``search``, ``booking_made``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from environments.browser.sites.base import SiteStore, esc, form_data, money, redirect
from environments.browser.sites.base import page as frame

TITLE = "SkyLark Travel"
BRAND = "#0d7a6f"
NAV = [("Flights", "/"), ("My trips", "/trips")]
CABINS = {"economy": 1.0, "premium": 1.6, "business": 2.8}


def default_fixture() -> dict[str, Any]:
    return {"flights": [
        {"id": "f1", "airline": "Bluejet", "number": "BJ 210", "from": "Lisbon", "to": "Berlin", "date": "2026-04-10",
         "depart": "07:40", "arrive": "12:05", "stops": 0, "price": 129.0, "seats_left": 9},
        {"id": "f2", "airline": "Aerolina", "number": "AL 88", "from": "Lisbon", "to": "Berlin", "date": "2026-04-10",
         "depart": "13:15", "arrive": "19:50", "stops": 1, "price": 98.0, "seats_left": 4},
    ], "bookings": []}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return frame(title, body, brand=BRAND, site_title=TITLE, nav=NAV, status=status)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def routes(store: SiteStore) -> list[Route]:
    def flights() -> list[dict[str, Any]]:
        return store.collection("flights")


    def search_form(v: dict[str, str] | None = None) -> str:
        v = v or {}
        cities = sorted({f["from"] for f in flights()} | {f["to"] for f in flights()})
        fields = "".join(
            f'<div style="flex:1"><label for="{n}">{lab}</label><input type="text" id="{n}" name="{n}" '
            f'value="{esc(v.get(n, ""))}" placeholder="{ph}"></div>'
            for n, lab, ph in (("from", "From", "City"), ("to", "To", "City"), ("date", "Date", "YYYY-MM-DD")))
        return (f'<form method="get" action="/flights" class="card"><div class="row">{fields}</div>'
                f'<p><button type="submit" id="search-flights">Search flights</button></p></form>'
                f'<p class="muted">We fly between: {esc(", ".join(cities))}.</p>')

    async def home(request: Request) -> Response:
        return _page("Find flights", f"<h1>Where to next?</h1>{search_form()}")

    async def results(request: Request) -> Response:
        q = {k: request.query_params.get(k, "").strip() for k in ("from", "to", "date")}
        store.record("search", **q)
        hits = [f for f in flights()
                if _norm(f["from"]) == _norm(q["from"]) and _norm(f["to"]) == _norm(q["to"])
                and (not q["date"] or f["date"] == q["date"])]
        hits.sort(key=lambda f: (f["date"], f["depart"]))
        rows = "".join(
            f'<tr><td>{esc(f["airline"])} <span class="muted">{esc(f["number"])}</span></td><td>{esc(f["date"])}</td>'
            f'<td>{esc(f["depart"])} → {esc(f["arrive"])}</td><td>{"nonstop" if not f["stops"] else str(f["stops"]) + " stop(s)"}</td>'
            f'<td class="price">{money(f["price"])}</td><td><a class="button" href="/book/{esc(f["id"])}" '
            f'data-flight="{esc(f["id"])}">Select</a></td></tr>' for f in hits)
        table = (f"<table><tr><th>Flight</th><th>Date</th><th>Time</th><th>Stops</th><th>Economy from</th><th></th></tr>"
                 f"{rows}</table>") if hits else '<div class="card">No flights found for this search.</div>'
        title = f"{q['from']} to {q['to']}"
        return _page(title, f"{search_form(q)}<h1>Flights {esc(title)} ({len(hits)})</h1>{table}")

    def book_form(f: dict[str, Any], error: str = "", v: dict[str, str] | None = None) -> str:
        v = v or {}
        cabins = "".join(
            f'<label><input type="radio" name="cabin" value="{c}" id="cabin-{c}"'
            f'{" checked" if v.get("cabin", "economy") == c else ""}> {c.capitalize()} ({money(f["price"] * m)})</label>'
            for c, m in CABINS.items())
        err = f'<div class="error">{esc(error)}</div>' if error else ""
        return (f'{err}<div class="card"><h1>{esc(f["airline"])} {esc(f["number"])}: {esc(f["from"])} → {esc(f["to"])}</h1>'
                f'<p>{esc(f["date"])}, departs {esc(f["depart"])}, arrives {esc(f["arrive"])}.</p></div>'
                f'<form method="post" action="/book/{esc(f["id"])}" class="card" style="max-width:620px">'
                f'<label for="passenger">Passenger full name</label><input type="text" id="passenger" name="passenger" value="{esc(v.get("passenger", ""))}">'
                f'<label for="email">Email</label><input type="email" id="email" name="email" value="{esc(v.get("email", ""))}">'
                f'<label>Cabin</label><div class="radio">{cabins}</div>'
                f'<label for="bags">Checked bags</label><input type="number" id="bags" name="bags" min="0" max="3" value="{esc(v.get("bags", "0"))}">'
                f'<p><button type="submit" id="confirm-booking">Confirm booking</button></p></form>')

    async def book(request: Request) -> Response:
        f = store.find("flights", request.path_params["fid"])
        if f is None:
            return _page("Not found", '<div class="error">Flight not found.</div>', status=404)
        return _page(f"Book {f['number']}", book_form(f))

    async def book_post(request: Request) -> Response:
        f = store.find("flights", request.path_params["fid"])
        if f is None:
            return _page("Not found", '<div class="error">Flight not found.</div>', status=404)
        form = await form_data(request)
        cabin = form.get("cabin", "")
        try:
            bags = int(form.get("bags", "0") or "0")
        except ValueError:
            bags = -1
        problem = ("Please enter the passenger's full name." if not form.get("passenger")
                   else "Please enter a valid email address." if "@" not in form.get("email", "")
                   else "Please choose a cabin." if cabin not in CABINS
                   else "Checked bags must be between 0 and 3." if not 0 <= bags <= 3
                   else "This flight is sold out." if f.get("seats_left", 1) <= 0 else "")
        if problem:
            return _page(f"Book {f['number']}", book_form(f, problem, form), status=422)
        ref = store.new_id("BK", "bookings")
        booking = {"id": ref, "flight_id": f["id"], "passenger": form["passenger"], "email": form["email"], "cabin": cabin,
                   "bags": bags, "price": round(f["price"] * CABINS[cabin] + 35.0 * bags, 2), "status": "confirmed"}
        store.collection("bookings").append(booking)
        f["seats_left"] = f.get("seats_left", 1) - 1
        store.record("booking_made", booking_id=ref, flight_id=f["id"])
        return redirect(f"/trips/{ref}")

    async def trip(request: Request) -> Response:
        b = store.find("bookings", request.path_params["ref"])
        if b is None:
            return _page("Not found", '<div class="error">Booking not found.</div>', status=404)
        f = store.find("flights", b["flight_id"]) or {}
        return _page(f"Booking {b['id']}", f'<div class="notice">Booking confirmed. Reference <b>{esc(b["id"])}</b>.</div>'
                                           f'<div class="card">{esc(b["passenger"])} — {esc(f.get("airline", ""))} {esc(f.get("number", ""))} '
                                           f'on {esc(f.get("date", ""))}, {esc(b["cabin"])}, {b["bags"]} bag(s). '
                                           f'Total <span class="price">{money(b["price"])}</span></div>')

    async def trips(request: Request) -> Response:
        rows = "".join(f'<tr><td><a href="/trips/{esc(b["id"])}">{esc(b["id"])}</a></td><td>{esc(b["passenger"])}</td>'
                       f'<td>{esc(b["cabin"])}</td></tr>' for b in store.collection("bookings"))
        body = f"<table><tr><th>Reference</th><th>Passenger</th><th>Cabin</th></tr>{rows}</table>" if rows else '<div class="card">No trips booked.</div>'
        return _page("My trips", f"<h1>My trips</h1>{body}")

    return [Route("/", home), Route("/flights", results), Route("/book/{fid}", book),
            Route("/book/{fid}", book_post, methods=["POST"]), Route("/trips", trips), Route("/trips/{ref}", trip)]
