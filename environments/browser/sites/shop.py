"""``shop.test``: an online store — search, categories, product pages, cart, checkout, orders.

Fixture: ``{"user": {"name"}, "products": [{"id", "name", "category", "price", "rating",
"reviews", "description", "specs": {...}}], "shipping": [{"id", "label", "price"}],
"cart": [{"product_id", "qty"}], "orders": [...]}``. A placed order is
``{"id", "items": [{"product_id", "name", "qty", "price"}], "shipping", "name", "address",
"city", "zip", "total", "status": "placed"}``; events: ``search``, ``cart_add``,
``cart_remove``, ``order_placed``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from environments.browser.sites.base import (
    SiteStore,
    esc,
    form_data,
    matches,
    money,
    redirect,
)
from environments.browser.sites.base import page as frame

TITLE = "Northwind Market"
BRAND = "#1f5fbf"
NAV = [("Home", "/"), ("Deals", "/search?q=deal"), ("Cart", "/cart"), ("Orders", "/orders")]


def default_fixture() -> dict[str, Any]:
    products = [
        ("p1", "Aurora Wireless Mouse", "Electronics", 24.99, 4.4),
        ("p2", "Nimbus Mechanical Keyboard", "Electronics", 79.0, 4.6),
        ("p3", "Trailblazer Water Bottle", "Outdoors", 18.5, 4.1),
        ("p4", "Summit Daypack 22L", "Outdoors", 64.0, 4.5),
        ("p5", "Harbor Ceramic Mug", "Kitchen", 12.0, 4.2),
        ("p6", "Ember Pour-Over Kettle", "Kitchen", 45.0, 4.7),
    ]
    return {
        "user": {"name": "Alex Doe"},
        "products": [{"id": i, "name": n, "category": c, "price": p, "rating": r, "reviews": 40 + 13 * k,
                      "description": f"The {n} — a customer favourite in {c.lower()}.", "specs": {}}
                     for k, (i, n, c, p, r) in enumerate(products)],
        "shipping": default_shipping(),
        "cart": [], "orders": [],
    }


def default_shipping() -> list[dict[str, Any]]:
    return [{"id": "standard", "label": "Standard (5-7 days)", "price": 0.0},
            {"id": "express", "label": "Express (2 days)", "price": 9.99},
            {"id": "overnight", "label": "Overnight", "price": 24.99}]


def _page(title: str, body: str, query: str = "", status: int = 200) -> HTMLResponse:
    return frame(title, body, brand=BRAND, site_title=TITLE, nav=NAV, search="/search", query=query, status=status)


def _stars(rating: float) -> str:
    return f'<span class="muted">★ {rating:.1f}</span>'


def _card(p: dict[str, Any]) -> str:
    return (f'<div class="card product"><a href="/product/{esc(p["id"])}" data-product="{esc(p["id"])}">'
            f'<b>{esc(p["name"])}</b></a><div class="row"><span class="price">{money(p["price"])}</span>'
            f'{_stars(p.get("rating", 0))}<span class="muted">({p.get("reviews", 0)} reviews)</span></div>'
            f'<div class="muted">{esc(p.get("category", ""))}</div></div>')


def routes(store: SiteStore) -> list[Route]:
    def products() -> list[dict[str, Any]]:
        return store.collection("products")


    async def home(request: Request) -> Response:
        cats = sorted({p.get("category", "") for p in products()})
        chips = " ".join(f'<a class="button" href="/category/{esc(c)}">{esc(c)}</a>' for c in cats)
        grid = "".join(_card(p) for p in products()[:6])
        user = store.data.get("user", {}).get("name", "")
        return _page("Home", f'<p class="muted">Signed in as {esc(user)}</p><h1>Shop by category</h1>'
                             f'<div class="row">{chips}</div><h2>Featured</h2><div class="grid">{grid}</div>')

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        store.record("search", query=q)
        scored = [(matches(q, p["name"], p.get("category", ""), p.get("description", "")), p) for p in products()]
        hits = [p for s, p in sorted(scored, key=lambda sp: -sp[0]) if s > 0]
        body = "".join(_card(p) for p in hits) or '<div class="card">No products match your search.</div>'
        return _page(f"Search: {q}", f'<h1>Results for “{esc(q)}” ({len(hits)})</h1><div class="grid">{body}</div>', q)

    async def category(request: Request) -> Response:
        cat = request.path_params["name"]
        hits = [p for p in products() if p.get("category") == cat]
        body = "".join(_card(p) for p in hits) or '<div class="card">Nothing here yet.</div>'
        return _page(cat, f'<h1>{esc(cat)}</h1><div class="grid">{body}</div>')

    async def product(request: Request) -> Response:
        p = store.find("products", request.path_params["pid"])
        if p is None:
            return _page("Not found", '<div class="error">Product not found.</div>', status=404)
        specs = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in (p.get("specs") or {}).items())
        table = f"<table>{specs}</table>" if specs else ""
        body = (f'<div class="card"><h1>{esc(p["name"])}</h1><div class="row"><span class="price" id="price">'
                f'{money(p["price"])}</span>{_stars(p.get("rating", 0))}<span class="muted">({p.get("reviews", 0)} reviews)'
                f'</span></div><p>{esc(p.get("description", ""))}</p>{table}'
                f'<form method="post" action="/cart/add" class="row" style="margin-top:12px">'
                f'<input type="hidden" name="product_id" value="{esc(p["id"])}">'
                f'<label for="qty" style="margin:0">Quantity</label><input type="number" id="qty" name="qty" value="1" min="1" max="20">'
                f'<button type="submit" id="add-to-cart">Add to cart</button></form></div>')
        return _page(p["name"], body)

    async def cart_add(request: Request) -> Response:
        form = await form_data(request)
        p = store.find("products", form.get("product_id", ""))
        try:
            qty = int(form.get("qty", "1") or "1")
        except ValueError:
            qty = 0
        if p is None or not 1 <= qty <= 20:
            return _page("Cart", '<div class="error">Could not add that to the cart (check the quantity).</div>', status=422)
        cart = store.collection("cart")
        line = next((c for c in cart if c["product_id"] == p["id"]), None)
        if line is None:
            cart.append({"product_id": p["id"], "qty": qty})
        else:
            line["qty"] += qty
        store.record("cart_add", product_id=p["id"], qty=qty)
        return redirect(f"/cart?added={p['id']}")

    async def cart_remove(request: Request) -> Response:
        form = await form_data(request)
        cart = store.collection("cart")
        cart[:] = [c for c in cart if c["product_id"] != form.get("product_id")]
        store.record("cart_remove", product_id=form.get("product_id"))
        return redirect("/cart")

    def cart_lines() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        out = []
        for c in store.collection("cart"):
            p = store.find("products", c["product_id"])
            if p is not None:
                out.append((c, p))
        return out

    async def cart(request: Request) -> Response:
        lines = cart_lines()
        added = request.query_params.get("added")
        note = ""
        if added and (p := store.find("products", added)):
            note = f'<div class="notice">Added {esc(p["name"])} to your cart.</div>'
        if not lines:
            return _page("Cart", f'{note}<h1>Your cart</h1><div class="card">Your cart is empty.</div>')
        rows = "".join(
            f'<tr><td>{esc(p["name"])}</td><td>{c["qty"]}</td><td>{money(p["price"] * c["qty"])}</td>'
            f'<td><form method="post" action="/cart/remove"><input type="hidden" name="product_id" value="{esc(p["id"])}">'
            f'<button type="submit">Remove</button></form></td></tr>' for c, p in lines)
        subtotal = sum(p["price"] * c["qty"] for c, p in lines)
        return _page("Cart", f'{note}<h1>Your cart</h1><table><tr><th>Item</th><th>Qty</th><th>Price</th><th></th></tr>'
                             f'{rows}</table><p>Subtotal: <span class="price">{money(subtotal)}</span></p>'
                             f'<a class="button" id="checkout" href="/checkout">Proceed to checkout</a>')

    def checkout_form(error: str = "", values: dict[str, str] | None = None) -> str:
        v = values or {}
        radios = "".join(
            f'<label><input type="radio" name="shipping" value="{esc(s["id"])}" id="ship-{esc(s["id"])}"'
            f'{" checked" if v.get("shipping", "standard") == s["id"] else ""}> {esc(s["label"])} '
            f'({money(s["price"])})</label>' for s in store.collection("shipping"))
        err = f'<div class="error">{esc(error)}</div>' if error else ""
        fields = "".join(
            f'<label for="{n}">{lab}</label><input type="text" id="{n}" name="{n}" value="{esc(v.get(n, ""))}">'
            for n, lab in (("name", "Full name"), ("address", "Street address"), ("city", "City"), ("zip", "ZIP code")))
        return (f'{err}<h1>Checkout</h1><form method="post" action="/checkout" class="card" style="max-width:620px">'
                f'{fields}<label>Shipping</label><div class="radio">{radios}</div>'
                f'<p><button type="submit" id="place-order">Place order</button></p></form>')

    async def checkout(request: Request) -> Response:
        if not cart_lines():
            return _page("Checkout", '<h1>Checkout</h1><div class="card">Your cart is empty.</div>')
        return _page("Checkout", checkout_form())

    async def place_order(request: Request) -> Response:
        form = await form_data(request)
        lines = cart_lines()
        missing = [n for n in ("name", "address", "city", "zip") if not form.get(n)]
        ship = next((s for s in store.collection("shipping") if s["id"] == form.get("shipping")), None)
        if not lines:
            return _page("Checkout", '<div class="error">Your cart is empty.</div>', status=422)
        if missing or ship is None:
            problem = f"Please fill in: {', '.join(missing)}." if missing else "Please choose a shipping option."
            return _page("Checkout", checkout_form(problem, form), status=422)
        oid = store.new_id("ORD", "orders")
        items = [{"product_id": p["id"], "name": p["name"], "qty": c["qty"], "price": p["price"]} for c, p in lines]
        total = round(sum(i["price"] * i["qty"] for i in items) + ship["price"], 2)
        order = {"id": oid, "items": items, "shipping": ship["id"], "name": form["name"], "address": form["address"],
                 "city": form["city"], "zip": form["zip"], "total": total, "status": "placed"}
        store.collection("orders").append(order)
        store.collection("cart").clear()
        store.record("order_placed", order_id=oid)
        return redirect(f"/order/{oid}")

    async def order(request: Request) -> Response:
        o = store.find("orders", request.path_params["oid"])
        if o is None:
            return _page("Not found", '<div class="error">Order not found.</div>', status=404)
        items = "".join(f"<li>{i['qty']} × {esc(i['name'])}</li>" for i in o["items"])
        return _page(f"Order {o['id']}", f'<div class="notice">Thank you! Your order {esc(o["id"])} has been placed.</div>'
                                         f'<div class="card"><ul>{items}</ul><p>Ship to {esc(o["name"])}, {esc(o["city"])} '
                                         f'({esc(o["shipping"])}). Total <span class="price">{money(o["total"])}</span></p></div>')

    async def orders(request: Request) -> Response:
        rows = "".join(f'<tr><td><a href="/order/{esc(o["id"])}">{esc(o["id"])}</a></td><td>{len(o["items"])}</td>'
                       f'<td>{money(o["total"])}</td></tr>' for o in store.collection("orders"))
        body = f"<table><tr><th>Order</th><th>Items</th><th>Total</th></tr>{rows}</table>" if rows else '<div class="card">No orders yet.</div>'
        return _page("Orders", f"<h1>Your orders</h1>{body}")

    return [
        Route("/", home), Route("/search", search), Route("/category/{name}", category),
        Route("/product/{pid}", product), Route("/cart", cart), Route("/cart/add", cart_add, methods=["POST"]),
        Route("/cart/remove", cart_remove, methods=["POST"]), Route("/checkout", checkout),
        Route("/checkout", place_order, methods=["POST"]), Route("/order/{oid}", order), Route("/orders", orders),
    ]
