"""The mock websites over HTTP (in-process ASGI): multi-step flows change the state the
verifier reads, bad form input is refused with a page, the control plane needs its header."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from environments.browser.app import create_app, load_fixture
from environments.browser.names import CONTROL_HEADER, SITE_NAMES
from environments.browser.sites.base import FixtureError

CONTROL = {CONTROL_HEADER: "1"}


@pytest.fixture
async def client():
    app = create_app(list(SITE_NAMES))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://shop.test",
                                 follow_redirects=True) as c:
        yield c


async def _state(c: httpx.AsyncClient, site: str) -> dict:
    r = await c.get(f"http://127.0.0.1/{site}/state", headers=CONTROL)
    assert r.status_code == 200
    return r.json()


async def test_shop_search_cart_checkout_places_an_order(client) -> None:
    r = await client.get("/search?q=kettle")
    assert "Ember Pour-Over Kettle" in r.text and "Aurora" not in r.text
    r = await client.post("/cart/add", data={"product_id": "p6", "qty": "2"})
    assert str(r.url).endswith("/cart?added=p6") and "Added Ember Pour-Over Kettle" in r.text
    r = await client.post("/checkout", data={"name": "Ana Park", "address": "1 Mill Lane", "city": "Oslo", "zip": "0150",
                                             "shipping": "express"})
    assert "/order/ORD-0001" in str(r.url) and "has been placed" in r.text
    doc = await _state(client, "shop")
    order = doc["state"]["orders"][0]
    assert order["items"] == [{"product_id": "p6", "name": "Ember Pour-Over Kettle", "qty": 2, "price": 45.0}]
    assert order["total"] == pytest.approx(2 * 45.0 + 9.99) and doc["state"]["cart"] == []
    assert [e["kind"] for e in doc["events"]] == ["search", "cart_add", "order_placed"]


async def test_shop_checkout_refuses_missing_fields_and_keeps_them(client) -> None:
    await client.post("/cart/add", data={"product_id": "p1", "qty": "1"})
    r = await client.post("/checkout", data={"name": "Ana", "address": "", "city": "Oslo", "zip": "", "shipping": "standard"})
    assert r.status_code == 422 and "Please fill in: address, zip." in r.text and 'value="Ana"' in r.text
    assert (await _state(client, "shop"))["state"]["orders"] == []
    r = await client.post("/cart/add", data={"product_id": "p1", "qty": "99"})
    assert r.status_code == 422


async def test_travel_search_and_booking(client) -> None:
    r = await client.get("http://travel.test/flights?from=lisbon&to=BERLIN&date=2026-04-10")
    assert "BJ 210" in r.text and "AL 88" in r.text
    r = await client.get("http://travel.test/flights?from=Lisbon&to=Berlin&date=2026-04-11")
    assert "No flights found" in r.text
    r = await client.post("http://travel.test/book/f2", data={"passenger": "Ana Park", "email": "nope", "cabin": "economy"})
    assert r.status_code == 422 and "valid email" in r.text
    r = await client.post("http://travel.test/book/f2", data={"passenger": "Ana Park", "email": "a@b.test",
                                                              "cabin": "business", "bags": "1"})
    assert "Booking confirmed" in r.text
    booking = (await _state(client, "travel"))["state"]["bookings"][0]
    assert booking | {"id": "x"} == {"id": "x", "flight_id": "f2", "passenger": "Ana Park", "email": "a@b.test",
                                     "cabin": "business", "bags": 1, "price": round(98.0 * 2.8 + 35, 2), "status": "confirmed"}


async def test_forum_reply_and_new_thread(client) -> None:
    r = await client.post("http://forum.test/t/t1/reply", data={"body": "x"})
    assert r.status_code == 422
    await client.post("http://forum.test/t/t1/reply", data={"body": "Hello from Alex"})
    r = await client.post("http://forum.test/new", data={"board": "general", "title": "Selling a scope", "body": "50 EUR"})
    assert "Selling a scope" in r.text
    threads = (await _state(client, "forum"))["state"]["threads"]
    assert threads[0]["posts"][-1] == {"id": "t1-r2", "author": "alex_d", "body": "Hello from Alex"}
    assert threads[1]["title"] == "Selling a scope" and threads[1]["board"] == "general"


async def test_docs_search_and_pages(client) -> None:
    r = await client.get("http://docs.test/search?q=listen port")
    results = r.text.split("Search results for", 1)[1]  # after the sidebar
    assert "Configuration" in results and "Installation" not in results
    r = await client.get("http://docs.test/page/config")
    assert "<code>8080</code>" in r.text
    assert (await client.get("http://docs.test/page/nope")).status_code == 404
    assert [e["kind"] for e in (await _state(client, "docs"))["events"]] == ["search", "page_view"]


async def test_control_plane_needs_its_header_and_reset_restores(client) -> None:
    assert (await client.get("http://127.0.0.1/shop/state")).status_code == 403
    assert (await client.post("http://127.0.0.1/shop/reset")).status_code == 403
    await client.post("/cart/add", data={"product_id": "p1", "qty": "1"})
    r = await client.post("http://127.0.0.1/shop/reset", headers=CONTROL, content=b"{}")
    assert r.json() == {"ok": True, "site": "shop"}
    doc = await _state(client, "shop")
    assert doc["state"]["cart"] == [] and doc["events"] == []
    assert (await client.get("http://127.0.0.1/healthz")).json() == {"ok": True, "sites": list(SITE_NAMES)}
    assert (await client.get("http://other.test/")).status_code == 404


def test_fixtures_load_from_a_dir_or_default(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text(json.dumps({"product": "Zed", "pages": []}))
    assert load_fixture("docs", tmp_path)["product"] == "Zed"
    assert load_fixture("shop", tmp_path)["products"]  # no file: the default catalogue
    (tmp_path / "forum.json").write_text("[1, 2]")
    with pytest.raises(FixtureError, match="forum"):
        load_fixture("forum", tmp_path)


def test_the_registry_picks_the_site_launcher_only_for_site_groups() -> None:
    from environments.domain_registry import UnknownServices, domain_for

    assert domain_for(["shop", "docs"]).serve_module == "environments.browser.serve"
    assert domain_for(["gmail"]).serve_module == "environments.claw.serve"
    with pytest.raises(UnknownServices, match="shop, gmail"):
        domain_for(["shop", "gmail"])
    with pytest.raises(UnknownServices):
        domain_for([])
