"""crm, kb and web services: actions and errors."""

from __future__ import annotations

import pytest

CRM = {
    "accounts": [
        {"id": "ACC-3", "name": "Quillsoft", "domain": "quillsoft.test"},
        {"id": "ACC-7", "name": "Quillworks", "domain": "quillworks.test", "industry": "Manufacturing"},
    ],
    "deals": [{"id": "D-1", "account_id": "ACC-7", "name": "Renewal", "stage": "proposal", "amount": 100.0}],
    "activities": [{"id": "A-1", "account_id": "ACC-7", "type": "call", "subject": "Pricing"}],
}
KB = {"articles": [
    {"id": "KB-1", "title": "Password reset links", "body": "Reset links are valid for 2 hours.", "tags": ["password"]},
    {"id": "KB-2", "title": "Email verification", "body": "Verification links are valid for 72 hours."},
]}
WEB = {"pages": [
    {"url": "https://docs.example.test/release", "title": "Release notes 4.2", "content": "Version 4.2 shipped on 2026-02-10."},
    {"url": "https://blog.example.test/why", "title": "Why we built it", "content": "A story.", "snippet": "Custom snippet"},
]}


@pytest.fixture
def claw(make_claw, fixtures_dir):
    return make_claw("crm,kb,web", fixtures_dir({"crm": CRM, "kb": KB, "web": WEB}))


def test_crm(claw):
    assert [a["id"] for a in claw.ok("crm_search_accounts", {"query": "quillworks.test"})["accounts"]] == ["ACC-7"]
    acc = claw.ok("crm_get_account", {"id": "ACC-7"})
    assert [d["id"] for d in acc["deals"]] == ["D-1"] and [a["id"] for a in acc["activities"]] == ["A-1"]
    assert claw.ok("crm_list_deals", {"stage": "won"})["deals"] == []
    assert claw.err("crm_list_deals", {"account_id": "ACC-404"}, status=404)["type"] == "not_found"
    deal = claw.ok("crm_update_deal", {"id": "D-1", "stage": "won", "close_date": "2026-03-20"})["deal"]
    assert deal["stage"] == "won" and deal["close_date"] == "2026-03-20"
    act = claw.ok("crm_log_activity", {"account_id": "ACC-7", "type": "meeting", "subject": "T-1 follow-up",
                                       "contact_email": "p@q.test"})["activity"]
    assert act["id"] == "A-0001" and act["date"].startswith("2026-03-02T09:00")
    assert "'type'" in claw.err("crm_log_activity", {"account_id": "ACC-7", "type": "lunch", "subject": "x"})["message"]
    assert claw.err("crm_log_activity", {"account_id": "nope", "type": "note", "subject": "x"}, status=404)["type"] == "not_found"
    assert "'amount'" in claw.err("crm_update_deal", {"id": "D-1", "amount": -5})["message"]


def test_kb(claw):
    hits = claw.ok("kb_search", {"query": "how long are password reset links valid"})["articles"]
    assert hits[0]["id"] == "KB-1" and "snippet" in hits[0]
    assert claw.ok("kb_get_article", {"id": "KB-2"})["article"]["title"] == "Email verification"
    assert claw.ok("kb_create_article", {"title": "New", "body": "Text"})["article"]["id"] == "KB-0001"
    assert claw.err("kb_get_article", {"id": "KB-9"}, status=404)["hint"].startswith("known ids: KB-1, KB-2")


def test_web(claw):
    res = claw.ok("web_search", {"query": "release 4.2"})["results"]
    assert res[0]["url"] == "https://docs.example.test/release"
    assert claw.ok("web_search", {"query": "story built"})["results"][0]["snippet"] == "Custom snippet"
    page = claw.ok("web_fetch", {"url": "http://docs.example.test/release/"})
    assert "2026-02-10" in page["content"]
    err = claw.err("web_fetch", {"url": "https://evil.test/"}, status=404)
    assert "web_search" in err["hint"]
