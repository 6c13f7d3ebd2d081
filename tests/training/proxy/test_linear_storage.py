"""Linear storage (storage/calls.py): every reader sees exactly what full storage shows.

The same trajectories — a react-like chat tool loop, a Codex-like Responses loop (25 KB of
instructions and tool schemas), a Claude-Code-like streamed Messages loop (cache_control
moving down the history, a side call on another thread), a compaction (the history replaced
by a summary) and two interleaved branches — are driven through two proxies on one fake
engine: one storing every call in full, one storing linearly. The admin API's calls, the
samples reconstructed from the DB, the SFT exports and the evaluation's steps must be equal;
the linear DB must be the smaller one. Old rows (revision 0001) stay readable after the
migration.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import select, text

from storage.calls import CallBase, encode_call, expand_calls, stored_bytes
from storage.db import make_engine
from storage.migrate import alembic_config, upgrade
from storage.models import ModelCall
from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.evaluation.actions import trajectory_steps
from training.proxy.client import ProxyAdminClient
from training.proxy.server import ProxyServer
from training.trajectory.build import build_trajectories
from training.trajectory.sft import sft_examples, sft_messages
from training.trajectory.source import load_rollouts_with_calls

N_STEPS = 6
INSTRUCTIONS = "You are a coding agent. Follow the repository's conventions. " * 420  # ~25 KB
TOOL_SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string", "description": "shell " * 200}},
               "required": ["cmd"]}


def _responder(body: dict[str, Any]) -> FakeReply:
    """Deterministic: a tool call until the history is long, then a final answer."""
    n = len(body.get("messages") or [])
    if n > 2 * N_STEPS:
        return FakeReply.text(f"done after {n} messages")
    return FakeReply.tool("run", {"cmd": f"ls step-{n}"}, content=f"thinking {n}")


# -- the shapes: each step gets (post) and builds the next body from what came back -----------
Post = Callable[[str, dict[str, Any]], dict[str, Any] | str]


def react_chat(post: Post) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools."},
                                      {"role": "user", "content": "List the repo."}]
    tools = [{"type": "function", "function": {"name": "run", "parameters": TOOL_SCHEMA}}]
    for step in range(N_STEPS):
        out = post("chat/completions", {"model": "fake-policy", "messages": messages, "tools": tools,
                                        "temperature": 0.7})
        msg = out["choices"][0]["message"]
        messages = messages + [{k: v for k, v in msg.items() if v is not None}]
        for call in msg.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"file-{step}.py"})


def codex_responses(post: Post) -> None:
    tools = [{"type": "function", "name": f"tool_{i}", "description": "x" * 300, "parameters": TOOL_SCHEMA}
             for i in range(8)]
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "Fix the failing test."}]}]
    for step in range(N_STEPS):
        out = post("responses", {"model": "fake-policy", "instructions": INSTRUCTIONS, "tools": tools,
                                 "input": items, "store": False, "parallel_tool_calls": False})
        for item in out["output"]:
            if item["type"] == "function_call":
                items = items + [{k: item[k] for k in ("type", "call_id", "name", "arguments")},
                                 {"type": "function_call_output", "call_id": item["call_id"],
                                  "output": f"exit 0, step {step}"}]
            elif item["type"] == "message":
                items = items + [{"type": "message", "role": "assistant", "content": item["content"]}]


def claude_messages(post: Post) -> None:
    system = [{"type": "text", "text": "You are Claude Code."},
              {"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": f"Tool{i}", "description": "y" * 300, "input_schema": TOOL_SCHEMA} for i in range(6)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "Refactor utils."}]}]
    for step in range(N_STEPS):
        sent = copy.deepcopy(messages)  # the cache marker sits on the newest message only
        sent[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        post("messages", {"model": "fake-policy", "system": system, "tools": tools, "messages": sent,
                          "max_tokens": 4096, "stream": True})
        if step == 2:  # a side call on its own thread (a title, a quota check)
            post("messages", {"model": "fake-policy", "max_tokens": 64, "stream": True,
                              "messages": [{"role": "user", "content": "Title for: refactor utils"}]})
        tool_id = f"toolu_{step}"
        messages = messages + [
            {"role": "assistant", "content": [{"type": "text", "text": f"thinking {step}"},
                                              {"type": "tool_use", "id": tool_id, "name": "Tool0",
                                               "input": {"cmd": f"ls step-{step}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]},
        ]


def compaction(post: Post) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Long task."}]
    for step in range(N_STEPS):
        if step == 3:  # the harness compacts: the history becomes one summary
            messages = [{"role": "user", "content": "Summary of the work so far: three steps done."}]
        out = post("chat/completions", {"model": "fake-policy", "messages": messages})
        messages = messages + [{"role": "assistant", "content": out["choices"][0]["message"]["content"]},
                               {"role": "user", "content": f"continue {step}"}]


def branches(post: Post) -> None:
    threads = {t: [{"role": "user", "content": f"thread {t}"}] for t in ("a", "b")}
    for step in range(N_STEPS):
        for t in ("a", "b"):
            out = post("chat/completions", {"model": "fake-policy", "messages": threads[t]})
            threads[t] = threads[t] + [{"role": "assistant", "content": out["choices"][0]["message"]["content"]},
                                       {"role": "user", "content": f"{t} {step}"}]


SHAPES = {"react_chat": react_chat, "codex_responses": codex_responses, "claude_messages": claude_messages,
          "compaction": compaction, "branches": branches}


async def _drive(server: ProxyServer, shape: Callable[[Post], None]) -> str:
    async with server.client() as admin:
        reg = await admin.register(task_id="t", group_id="g", harness="shape")
    with httpx.Client(base_url=reg.base_url + "/", timeout=30) as http:
        def post(path: str, body: dict[str, Any]) -> dict[str, Any] | str:
            r = http.post(path, json=body)
            assert r.status_code == 200, r.text
            return r.text if body.get("stream") else r.json()

        import asyncio

        await asyncio.to_thread(shape, post)
    async with ProxyAdminClient(server.url, server.admin_key) as admin:
        await admin.finish(reg.rollout_id, status="ok", reward=1.0)
    return reg.rollout_id


_VOLATILE = {"created_at", "latency_ms"}


def _comparable(call: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in call.items() if k not in _VOLATILE}
    out["response"] = {k: v for k, v in (call["response"] or {}).items() if k not in ("id", "created")}
    return out


@pytest.fixture
def fake() -> FakeVLLM:
    with FakeVLLM(responder=_responder, deterministic_ids=True) as f:
        yield f


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_linear_storage_reads_like_full_storage(shape: str, fake: FakeVLLM, tmp_path: Path) -> None:
    urls = {mode: f"sqlite:///{tmp_path / mode}.db" for mode in ("full", "linear")}
    calls: dict[str, list[dict[str, Any]]] = {}
    pairs: dict[str, list] = {}
    sizes: dict[str, int] = {}
    for mode, url in urls.items():
        engine = OpenAICompatEngine(fake.base_url, timeout=10.0)
        with ProxyServer(engine, db_url=url, linear_storage=mode == "linear") as server:
            rollout_id = await _drive(server, SHAPES[shape])
            async with server.client() as admin:
                calls[mode] = await admin.calls(rollout_id)
        await engine.aclose()
        db = make_engine(url)
        pairs[mode] = load_rollouts_with_calls(db, rollout_ids=[rollout_id])
        with db.connect() as conn:
            rows = conn.execute(select(ModelCall.__table__)).mappings().all()
            # bytes in the rows plus what side files hold for them (training/proxy/side_files.py)
            sizes[mode] = sum(stored_bytes(r) + (int(r["side_file"].rpartition(":")[2]) if r["side_file"] else 0)
                              for r in rows)
            n_delta = sum(r["base_index"] is not None for r in rows)
            if mode == "full":
                assert n_delta == 0
            elif shape != "compaction":
                assert n_delta >= len(rows) - 2, f"{shape}: only {n_delta} of {len(rows)} calls stored as deltas"
        db.dispose()

    # The admin API: identical calls.
    assert len(calls["full"]) == len(calls["linear"]) >= N_STEPS
    assert [_comparable(c) for c in calls["linear"]] == [_comparable(c) for c in calls["full"]]
    assert all(c["prompt_token_ids"] for c in calls["linear"])
    # Reconstruction, SFT export and evaluation read the DB rows: identical too.
    (full_pair,), (lin_pair,) = pairs["full"], pairs["linear"]
    assert [_comparable({k: getattr(c, k) for k in calls["full"][0]}) for c in lin_pair[1]] == \
        [_comparable({k: getattr(c, k) for k in calls["full"][0]}) for c in full_pair[1]]
    (traj_full,), _ = build_trajectories([full_pair])
    (traj_lin,), _ = build_trajectories([lin_pair])
    assert [(s.prompt_ids, s.response_ids, s.response_logprobs, s.sampling) for s in traj_lin.samples] == \
        [(s.prompt_ids, s.response_ids, s.response_logprobs, s.sampling) for s in traj_full.samples]
    assert [(e.input_ids, e.loss_mask) for e in sft_examples(traj_lin)] == \
        [(e.input_ids, e.loss_mask) for e in sft_examples(traj_full)]
    strip = {"rollout_id"}
    assert {k: v for k, v in sft_messages(traj_lin).items() if k not in strip} == \
        {k: v for k, v in sft_messages(traj_full).items() if k not in strip}
    assert trajectory_steps(calls["linear"]) == trajectory_steps(calls["full"])
    # And it is smaller: much smaller where prompts extend each other.
    assert sizes["linear"] < sizes["full"], sizes
    if shape in ("codex_responses", "claude_messages", "react_chat"):
        assert sizes["linear"] * 2 < sizes["full"], sizes


def test_expanded_calls_share_no_mutable_objects() -> None:
    rows = [{"index": 0, "request": {"messages": [{"role": "user", "content": "a"}]}, "prompt_token_ids": list(range(40)),
             "response_token_ids": [7, 8]},
            {"index": 1, "request": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
             "prompt_token_ids": [*range(40), 7, 8, 9], "response_token_ids": [1]}]
    base = CallBase(0, rows[0]["request"], rows[0]["prompt_token_ids"], rows[0]["response_token_ids"])
    stored = [{**rows[0], "base_index": None, "delta": None}, encode_call(rows[1], [base])]
    assert stored[1]["base_index"] == 0 and stored[1]["prompt_token_ids"] == [9]
    assert stored[1]["request"] == {"messages": [{"role": "assistant", "content": "b"}]}
    a, b = expand_calls(stored)
    assert (a["request"], b["request"], b["prompt_token_ids"]) == (rows[0]["request"], rows[1]["request"],
                                                                  rows[1]["prompt_token_ids"])
    b["request"]["messages"][0]["content"] = "changed"
    assert a["request"]["messages"][0]["content"] == "a"


def test_a_prompt_sharing_nothing_is_stored_in_full() -> None:
    base = CallBase(0, {"messages": [{"role": "user", "content": "x"}]}, [1, 2, 3] * 20, [4])
    row = {"index": 1, "request": {"messages": [{"role": "user", "content": "y"}]}, "prompt_token_ids": [9] * 60}
    out = encode_call(row, [base])
    assert out["base_index"] is None and out["prompt_token_ids"] == [9] * 60 and out["request"] == row["request"]


def test_rows_from_before_the_migration_read_unchanged(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    db = make_engine(url)
    cfg = alembic_config(url)
    with db.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        conn.execute(text("INSERT INTO rollouts (id, role, status, n_calls, timings, metadata, created_at) "
                          "VALUES ('old', 'train', 'ok', 2, '{}', '{}', '2026-11-30 00:00:00')"))
        for i in range(2):
            conn.execute(text("INSERT INTO model_calls (rollout_id, \"index\", api, request, prompt_token_ids, "
                              "response_token_ids, status, created_at) VALUES ('old', :i, 'chat', :req, :p, '[5]', 'ok', "
                              "'2026-11-30 00:00:00')"),
                         {"i": i, "req": '{"messages": [' + ", ".join(['{"role": "user", "content": "q"}'] * (i + 1)) + "]}",
                          "p": str(list(range(10 + i)))})
    upgrade(url, db)
    (_rollout, calls), = load_rollouts_with_calls(db, rollout_ids=["old"])
    assert [c.prompt_token_ids for c in calls] == [list(range(10)), list(range(11))]
    assert [len(c.request["messages"]) for c in calls] == [1, 2]
    db.dispose()


async def test_the_recorder_keeps_one_base_per_thread(sqlite_url: str) -> None:
    from training.proxy.recorder import CallRecord, Recorder

    rec = Recorder(sqlite_url)
    await rec.start()
    try:
        state, _ = await rec.register(task_id="t")
        prompt: list[int] = list(range(100))
        for i in range(4):  # one thread: each call extends the last
            await rec.record(state, CallRecord(api="chat", model="m", request={"messages": [i]}, response={},
                                               prompt_token_ids=prompt, response_token_ids=[7, 8]))
            assert len(state.bases) == 1
            prompt = prompt + [7, 8, 1000 + i]
        await rec.record(state, CallRecord(api="chat", model="m", request={"messages": ["side"]}, response={},
                                           prompt_token_ids=[5] * 30, response_token_ids=[9]))
        assert [b.index for b in state.bases] == [4, 3]  # the side thread and the main one
        await rec.record(state, CallRecord(api="chat", model="m", request={"messages": [9]}, response={},
                                           prompt_token_ids=prompt, response_token_ids=[1]))
        assert [b.index for b in state.bases] == [5, 4]
        calls = await rec.calls(state.rollout_id)
        assert calls[5]["prompt_token_ids"] == prompt and calls[4]["prompt_token_ids"] == [5] * 30
    finally:
        await rec.stop()


def test_token_array_holds_64_bit_ids_only() -> None:
    from array import array

    from training.proxy.recorder import token_array

    ids = token_array([3, 1, 2])
    assert ids == array("q", [3, 1, 2]) and token_array(ids) is ids
    assert token_array(None) is None and token_array([]) is None
    assert token_array([1, 2**70]) is None and token_array([1, "2"]) is None


async def test_ids_as_arrays_are_stored_as_lists_are(tmp_path: Path) -> None:
    """The proxy passes the engine's prompt ids as an array (model_call.py); the rows written and
    the calls read back are the same as for lists, linear or not; ids no array holds still record."""
    from array import array

    from sqlalchemy import text

    from storage.db import make_engine
    from training.proxy.recorder import CallRecord, Recorder

    seen = {}
    for kind in ("list", "array"):
        url = f"sqlite:///{tmp_path / kind}.db"
        rec = Recorder(url)
        await rec.start()
        try:
            state, _ = await rec.register(rollout_id="r", task_id="t")
            prompt: list[int] = list(range(100))
            for i in range(3):
                ids = prompt if kind == "list" else array("q", prompt)
                await rec.record(state, CallRecord(api="chat", model="m", request={"messages": list(range(i + 1))},
                                                   response={}, prompt_token_ids=ids, response_token_ids=[7, 8]))
                prompt = prompt + [7, 8, 1000 + i]
            await rec.record(state, CallRecord(api="chat", model="m", request={"messages": [0]}, response={},
                                               prompt_token_ids=[*range(20), 2**70], response_token_ids=[1]))
            calls = [{k: v for k, v in c.items() if k != "created_at"} for c in await rec.calls("r")]
        finally:
            await rec.stop()
        engine = make_engine(url)
        try:
            with engine.connect() as conn:
                raw = conn.execute(text('SELECT "index", base_index, delta, request, prompt_token_ids, '
                                        'response_token_ids FROM model_calls ORDER BY "index"')).all()
        finally:
            engine.dispose()
        seen[kind] = (calls, [tuple(r) for r in raw])
    assert seen["list"] == seen["array"]
    calls, raw = seen["array"]
    assert [r[1] for r in raw] == [None, 0, 1, None]  # linear where it extends, in full where no array holds the ids
    assert calls[2]["prompt_token_ids"] == list(range(100)) + [7, 8, 1000, 7, 8, 1001]
    assert calls[3]["prompt_token_ids"] == [*range(20), 2**70]
