"""The recorder on both DBs the project supports (SQLite and PostgreSQL): register, calls in
order with token ids, sticky engine errors, finish, and a fresh recorder resuming a token."""

from __future__ import annotations

import asyncio

import pytest

from tests.storage.conftest import db_url  # noqa: F401 - the sqlite/postgres parametrized fixture
from training.proxy.errors import ProxyError
from training.proxy.recorder import CallRecord, Recorder


def _call(i: int) -> CallRecord:
    return CallRecord(api="chat", model="m", request={"messages": [{"role": "user", "content": f"q{i}"}]},
                      response={"choices": []}, prompt_token_ids=[1, 2, i], response_token_ids=[i],
                      response_logprobs=[-0.5], finish_reason="stop")


async def test_recorder_round_trip(db_url: str) -> None:  # noqa: F811
    rec = Recorder(db_url, migrate=False)
    await rec.start()
    try:
        state, token = await rec.register(task_id="t", group_id="g", metadata={"k": 1})
        await asyncio.gather(*(rec.record(state, _call(i)) for i in range(5)))
        await rec.record(state, CallRecord(api="chat", model="m", request={}, response=None, status="error",
                                           error="engine_error: boom", engine_error=True))
        calls = await rec.calls(state.rollout_id)
        assert [c["index"] for c in calls] == list(range(6))
        assert sorted(c["prompt_token_ids"][2] for c in calls[:5]) == list(range(5))
        assert calls[5]["status"] == "error" and calls[5]["response_token_ids"] is None
        row = await rec.get(state.rollout_id)
        assert (row["n_calls"], row["status"], row["error_kind"], row["metadata"]) == (6, "infra_error", "engine_error", {"k": 1})
        # A second recorder on the same DB (a restarted proxy) knows the token and continues.
        other = Recorder(db_url, migrate=False)
        await other.start()
        try:
            resumed = await other.resolve(token)
            assert resumed.next_index == 6 and resumed.engine_errors == 1
            done = await other.finish(resumed, status="ok", reward=1.0)
            assert (done["status"], done["reward"], done["live"]) == ("infra_error", 1.0, False)
            assert done["metadata"] == {"k": 1, "reported_status": "ok"}
        finally:
            await other.stop()
        with pytest.raises(ProxyError) as exc:
            await Recorder(db_url, migrate=False).resolve("nope")
        assert exc.value.status == 401
    finally:
        await rec.stop()
