"""The recorder's fast write path (issue 18): precompiled rows, WAL checkpoints beside the
writer, and model routes dispatched before the framework's stack.

- rows written by ``training.proxy.rows.CallRows`` read back through SQLAlchemy exactly as rows
  written by Core (JSON ``null`` for ``None``, timestamps, floats) on SQLite and PostgreSQL;
- the writer's connection never checkpoints inside a commit, and the background checkpointer
  keeps the WAL short;
- model routes answer the same as through FastAPI's router (token in the path or in a header,
  405 for another method, 404 for another suffix).
"""

from __future__ import annotations

import asyncio
from array import array
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from storage.db import make_engine
from storage.migrate import upgrade
from storage.models import ModelCall, Rollout
from testkit.fakes.vllm import FakeVLLM
from tests.storage.conftest import db_url  # noqa: F401 - the sqlite/postgres parametrized fixture
from training.proxy.client import ProxyAdminClient
from training.proxy.recorder import CallRecord, Recorder
from training.proxy.rows import CallRows

_CALLS = ModelCall.__table__


def _row(index: int, **over: Any) -> dict[str, Any]:
    """A full row; its content depends on ``index % 2`` only (rows 0/2 and 1/3 hold the same)."""
    k = index % 2
    row: dict[str, Any] = {
        "rollout_id": "r1", "index": index, "api": "chat", "model": "m",
        "request": {"messages": [{"role": "user", "content": f"q{k} ünïcode \u2028"}], "n": 1.5, "t": True},
        "response": {"choices": [{"message": {"content": "a"}}]}, "side_file": None, "base_index": None,
        "delta": None, "prompt_token_ids": [1, 2, k], "response_token_ids": [k],
        "response_logprobs": [-0.25], "finish_reason": "stop", "usage": {"completion_tokens": 1}, "latency_ms": 1.25,
        "policy_version": 3, "status": "ok", "error": None, "created_at": datetime(2026, 1, 2, 3, 4, 5, 678901, UTC),
    }
    row.update(over)
    return row


def _read(engine: Any) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(select(_CALLS).order_by(_CALLS.c.index)).mappings().all()
    return [{k: v for k, v in r.items() if k != "id"} for r in rows]


def test_call_rows_read_back_as_core_wrote_them(db_url: str) -> None:  # noqa: F811
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(Rollout.__table__.insert(), [{"id": "r1", "token_sha256": "s", "status": "running",
                                                       "role": "train", "metadata": {}}])
        core = [_row(0), _row(1, response=None, prompt_token_ids=None, usage=None, status="error", error="boom")]
        # The proxy hands the recorder token ids as array('q') (recorder.token_array): written as the same JSON.
        fast = [_row(2, prompt_token_ids=array("q", [1, 2, 0])),
                _row(3, response=None, prompt_token_ids=None, usage=None, status="error", error="boom")]
        with engine.begin() as conn:
            conn.execute(_CALLS.insert(), core)
        rows = CallRows(engine.dialect)
        with engine.begin() as conn:
            rows.insert(conn, fast)
            rows.set_counts(conn, {"r1": 4})
        read = _read(engine)
        for a, b in ((read[0], read[2]), (read[1], read[3])):
            assert {**a, "index": None} == {**b, "index": None}
        assert read[2]["request"] == fast[0]["request"] and read[3]["response"] is None
        with engine.connect() as conn:
            assert conn.execute(select(Rollout.n_calls)).scalar() == 4
            if engine.dialect.name == "sqlite":  # None in a JSON column is JSON null, as Core stores it
                raw = conn.exec_driver_sql("SELECT response, typeof(response) FROM model_calls "
                                           "ORDER BY \"index\"").all()
                assert raw[1] == raw[3] == ("null", "text")
    finally:
        engine.dispose()


async def test_writer_checkpoints_beside_commits(sqlite_url: str) -> None:
    upgrade(sqlite_url)
    rec = Recorder(sqlite_url, migrate=False, side_files=False)  # large rows stay in the DB here
    rec._checkpointer.interval_s = 0.05  # type: ignore[union-attr]
    await rec.start()
    wal = Path(sqlite_url.removeprefix("sqlite:///") + "-wal")
    try:
        state, _ = await rec.register(task_id="t")
        big = "x" * 200_000
        await asyncio.gather(*(rec.record(state, CallRecord(api="chat", model="m", request={"big": f"{i}{big}"},
                                                            response={}, prompt_token_ids=[i]))
                               for i in range(30)))
        conn = rec._write_conn
        assert conn is not None
        assert conn.connection.driver_connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        # 30 x 200 KB went into the WAL with automatic checkpoints off; the checkpointer copies
        # them into the database file beside the writer (without it the file would stay small).
        db_file = Path(sqlite_url.removeprefix("sqlite:///"))
        for _ in range(200):
            if db_file.stat().st_size > 30 * 200_000:
                break
            await asyncio.sleep(0.05)
        assert db_file.stat().st_size > 30 * 200_000
        assert [c["index"] for c in await rec.calls(state.rollout_id)] == list(range(30))
    finally:
        await rec.stop()
    assert not wal.exists() or wal.stat().st_size < 50 * 200_000


async def test_model_routes_by_path_by_header_and_fallbacks(fake_vllm: FakeVLLM, admin: ProxyAdminClient) -> None:
    reg = await admin.register(task_id="t")
    base = reg.base_url.split("/rollouts/")[0]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(timeout=30) as http:
        by_path = await http.post(f"{reg.base_url}/chat/completions", json=body)
        by_header = await http.post(f"{base}/v1/chat/completions", json=body,
                                    headers={"authorization": f"Bearer {reg.token}"})
        by_key = await http.post(f"{base}/v1/messages", json={**body, "max_tokens": 8},
                                 headers={"x-api-key": reg.token})
        wrong_method = await http.get(f"{reg.base_url}/chat/completions")
        unknown = await http.post(f"{reg.base_url}/chat/completion", json=body)
        no_token = await http.post(f"{base}/v1/chat/completions", json=body)
    assert by_path.status_code == by_header.status_code == by_key.status_code == 200
    assert "server-timing" in by_path.headers
    assert by_key.json()["type"] == "message"
    assert (wrong_method.status_code, unknown.status_code) == (405, 404)
    assert no_token.status_code == 401 and no_token.json()["error"]["type"]
    assert [c["api"] for c in await admin.calls(reg.rollout_id)] == ["chat", "chat", "messages"]


@pytest.mark.parametrize("path", ["/rollouts//v1/chat/completions", "/rollouts/tok/v2/chat/completions"])
def test_fast_path_leaves_other_paths_to_the_router(path: str) -> None:
    from training.proxy.fast_path import ProxyApp

    app = ProxyApp()

    async def handler(request: Any, token: str | None) -> Any:
        raise AssertionError("not a model route")

    app.add_model_route("POST", "chat/completions", handler)
    assert app._match({"type": "http", "method": "POST", "path": path}) is None
    assert app._match({"type": "http", "method": "POST", "path": "/rollouts/tok/v1/chat/completions"})[1] == "tok"


async def test_large_payloads_go_to_side_files_and_read_back(sqlite_url: str) -> None:
    upgrade(sqlite_url)
    rec = Recorder(sqlite_url, migrate=False)
    assert rec.side_files is not None and rec.side_files.threshold == 64 * 1024
    await rec.start()
    try:
        state, _ = await rec.register(rollout_id="../../escape", task_id="t")
        big = {"messages": [{"role": "user", "content": "y" * 100_000}]}
        ids = list(range(30_000))
        await rec.record(state, CallRecord(api="chat", model="m", request=big, response={"choices": []},
                                           prompt_token_ids=ids, response_token_ids=[7], response_logprobs=[-0.5]))
        await rec.record(state, CallRecord(api="chat", model="m", request={"messages": [{"role": "user", "content": "q"}]},
                                           response=None, prompt_token_ids=[1, 2], status="error", error="x"))
        calls = await rec.calls(state.rollout_id)
    finally:
        await rec.stop()
    assert calls[0]["request"] == big and calls[0]["prompt_token_ids"] == ids
    assert (calls[0]["response_token_ids"], calls[0]["response_logprobs"]) == ([7], [-0.5])
    assert calls[1]["request"]["messages"][0]["content"] == "q" and calls[1]["response"] is None
    engine = make_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql('SELECT side_file, request IS NULL, prompt_token_ids IS NULL, usage '
                                        'FROM model_calls ORDER BY "index"').all()
    finally:
        engine.dispose()
    side, no_request, no_ids, _ = rows[0]
    assert no_request and no_ids  # the row holds no payload; the side file does
    path = Path(side.rpartition("#")[0])
    root = Path(sqlite_url.removeprefix("sqlite:///") + "-calls")
    assert path.is_relative_to(root) and ".." not in path.name and path.stat().st_size > 200_000
    assert rows[1][0] is None and not rows[1][1]  # a small call stays in its row
    # Every reader expands through storage.calls.expand_calls, which reads the side file.
    from training.trajectory.source import load_rollouts_with_calls

    engine = make_engine(sqlite_url)
    try:
        ((_, loaded),) = load_rollouts_with_calls(engine, rollout_ids=["../../escape"])
    finally:
        engine.dispose()
    assert loaded[0].request == big and loaded[0].prompt_token_ids == ids


async def test_inline_writes_never_block_the_loop_on_a_locked_db(sqlite_url: str) -> None:
    """SQLite batches are written on the event loop only while the write lock is free: with
    another process's transaction holding it, the call waits in the writer thread (the loop
    keeps serving) and is committed, and acknowledged, once the lock is released."""
    import sqlite3

    upgrade(sqlite_url)
    rec = Recorder(sqlite_url, migrate=False)
    await rec.start()
    try:
        state, _ = await rec.register(task_id="t")
        await rec.record(state, CallRecord(api="chat", model="m", request={"q": 0}, response={}, prompt_token_ids=[0]))
        other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            pending = asyncio.create_task(rec.record(state, CallRecord(api="chat", model="m", request={"q": 1},
                                                                       response={}, prompt_token_ids=[1])))
            ticks = 0
            for _ in range(20):
                await asyncio.sleep(0.01)
                ticks += 1
            assert ticks == 20 and not pending.done()  # the loop ran; the call is not acknowledged yet
        finally:
            other.execute("COMMIT")
            other.close()
        assert await asyncio.wait_for(pending, 30) == 1
        # Back on the inline path after the backoff: later calls are written as before.
        for i in range(2, 40):
            await rec.record(state, CallRecord(api="chat", model="m", request={"q": i}, response={}, prompt_token_ids=[i]))
        assert [c["request"]["q"] for c in await rec.calls(state.rollout_id)] == list(range(40))
    finally:
        await rec.stop()
