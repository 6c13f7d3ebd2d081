"""The HTTP surface as a whole: every tool answers malformed input with a 4xx JSON error
(never a 5xx), unknown tools/services/methods are explained, audit/reset span services."""

from __future__ import annotations

import pytest

from environments.claw.services import SERVICE_NAMES
from environments.claw.tools import tools_for

ALL_TOOLS = tools_for("all")
MALFORMED = [
    b"{not json",
    b"[1, 2]",
    b'"a string"',
    b"null",
    b"42",
    b'{"unexpected_argument": 1}',
    b'{"id": {"nested": true}, "query": [1], "to": 5, "limit": "many", "date": 7, "path": null}',
    b"\xff\xfe binary",
    b'{"id": NaN, "amount": Infinity}',
    b"[" * 100_000,
]


@pytest.fixture(scope="module")
def client():
    from starlette.testclient import TestClient

    from environments.claw.app import create_app

    with TestClient(create_app("all")) as c:
        yield c


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=[t["name"] for t in ALL_TOOLS])
def test_every_tool_rejects_malformed_bodies_with_4xx_json(client, tool):
    path = tool["endpoint"]["path"]
    for body in MALFORMED:
        resp = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert 400 <= resp.status_code < 500, (body, resp.status_code, resp.text)
        err = resp.json()["error"]
        assert err["type"] in {"invalid_json", "invalid_arguments"}, err
        assert err["message"].startswith(tool["name"] + ":"), err


def test_empty_body_means_no_arguments(client):
    assert client.post("/gmail/search").status_code == 200
    resp = client.post("/gmail/send")
    assert resp.status_code == 422 and "'to': required" in resp.json()["error"]["message"]


def test_unknown_tool_service_and_method(client):
    resp = client.post("/gmail/delete_everything", json={})
    assert resp.status_code == 404 and resp.json()["error"]["type"] == "unknown_tool"
    assert "gmail_send" in resp.json()["error"]["hint"]
    resp = client.post("/slack/post", json={})
    assert resp.status_code == 404 and resp.json()["error"]["type"] == "unknown_service"
    assert "gmail" in resp.json()["error"]["message"]
    resp = client.get("/gmail/send")
    assert resp.status_code == 405 and "use POST" in resp.json()["error"]["message"]
    resp = client.post("/gmail/state")
    assert resp.status_code == 405 and "use GET" in resp.json()["error"]["message"]
    assert client.get("/gmail/audit", params={"since": "x"}).status_code == 422


def test_healthz_tools_and_global_audit_order(make_claw):
    claw = make_claw("notes,kb")
    assert claw.http.get("/healthz").json() == {"ok": True, "services": ["notes", "kb"]}
    names = [t["name"] for t in claw.http.get("/tools").json()["tools"]]
    assert names[0] == "notes_list" and "kb_search" in names and not any(n.startswith("gmail") for n in names)
    claw.ok("kb_create_article", {"title": "A", "body": "B"})
    claw.ok("notes_create", {"title": "N"})
    events = claw.http.get("/audit").json()["events"]
    assert [(e["service"], e["kind"]) for e in events] == [("kb", "call"), ("kb", "change"), ("notes", "call"), ("notes", "change")]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert claw.http.post("/reset", json={"fixtures": {"kb": {"articles": [{"id": "K", "title": "t", "body": "b"}]}}}).status_code == 200
    assert claw.http.get("/audit").json()["events"] == []
    assert [a["id"] for a in claw.state("kb")["articles"]] == ["K"] and claw.state("notes")["notes"] == []
    assert claw.http.post("/reset", content=b"[").status_code == 422


def test_service_names_have_no_underscore_and_tools_route_by_convention():
    assert all("_" not in s for s in SERVICE_NAMES)
    for tool in ALL_TOOLS:
        svc, action = tool["name"].split("_", 1)
        assert tool["endpoint"] == {"method": "POST", "path": f"/{svc}/{action}"} and tool["service"] == svc


def test_create_app_rejects_unknown_service_and_bad_fixtures(tmp_path):
    from environments.claw.app import create_app
    from environments.claw.core import FixtureError
    from environments.claw.services import UnknownServiceError

    with pytest.raises(UnknownServiceError, match="unknown claw service 'slack'"):
        create_app("gmail,slack")
    (tmp_path / "gmail.json").write_text('{"messages": [{"id": "m1", "from": "a@b", "subject": "s"}, {"id": "m1", "from": "a@b", "subject": "t"}]}')
    with pytest.raises(FixtureError, match=r"gmail.json: messages\[1\]: duplicate id 'm1'"):
        create_app("gmail", str(tmp_path))
    (tmp_path / "gmail.json").write_text("{oops")
    with pytest.raises(FixtureError, match="gmail.json: invalid JSON"):
        create_app("gmail", str(tmp_path))
    single = tmp_path / "all.json"
    single.write_text('{"kb": {"articles": [{"title": "T", "body": "B"}]}}')
    from starlette.testclient import TestClient

    with TestClient(create_app("kb,notes", str(single))) as c:
        assert c.get("/kb/state").json()["state"]["articles"][0]["id"] == "KB-0001"


def _sample(prop: dict):
    if "enum" in prop:
        return prop["enum"][-1]
    kind = prop.get("type")
    if kind == "array":
        return ["someone@example.test"]
    if kind == "integer":
        return prop.get("minimum", 1)
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    desc = prop.get("description", "")
    if "YYYY-MM-DD" in desc:
        return "2026-03-04"
    if "ISO 8601" in desc:
        return "2026-03-04T10:00:00Z"
    return "x@example.test"


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=[t["name"] for t in ALL_TOOLS])
def test_every_tool_survives_schema_valid_arguments(client, tool):
    """Arguments that match the schema but name things that do not exist: 2xx or 4xx."""
    props = tool["input_schema"]["properties"]
    for fields in (tool["input_schema"].get("required", []), list(props)):
        args = {name: _sample(props[name]) for name in fields}
        resp = client.post(tool["endpoint"]["path"], json=args)
        assert resp.status_code < 500, (args, resp.text)
        assert ("result" in resp.json()) == (resp.status_code == 200)
