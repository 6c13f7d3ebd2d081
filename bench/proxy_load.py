"""Trajectory workloads for bench/proxy.py: the shapes of real harness traffic (issue 18).

- ``codex``: OpenAI Responses, streamed; ~25 KB of instructions + tool schemas on every call,
  40 calls, each adding a tool call and ~5 KB of tool output, the context growing to ~60k
  tokens (at the mock's 4 bytes a token).
- ``claude``: Anthropic Messages, streamed; a ~25 KB system prompt in blocks with
  ``cache_control`` on the newest message, 40 calls to ~60k tokens.
- ``chat``: OpenAI chat completions, 20 calls to ~8k tokens (a react-style agent).

Each workload is one list of request bodies (one rollout's calls; every rollout replays the
same list), precomputed as bytes so the load generator stays cheap. The mock engine answers
in vLLM's wire format: ``prompt_token_ids`` (4 bytes of the rendered messages a token, so a
prompt extends the previous call's prompt exactly as a real tokenizer's would), ``token_ids``
and logprobs for a reply with one tool call; ``model = "bench-slow"`` answers after
``--engine-delay`` (a real engine's service time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

MODEL = "bench-policy"
BYTES_PER_TOKEN = 4
VOCAB = 151_000


@dataclass(frozen=True)
class Workload:
    name: str
    api: str  # chat | responses | messages
    path: str  # under /v1/
    bodies: list[bytes]
    stream: bool
    final_tokens: int  # prompt tokens of the last call (mock tokenizer)


# -- the mock tokenizer and engine answer ---------------------------------------------------------
def tokenize(data: bytes) -> list[int]:
    pad = (-len(data)) % BYTES_PER_TOKEN
    arr = np.frombuffer(data + b" " * pad, dtype="<u4") % VOCAB
    return arr.tolist()


def prompt_ids(body: dict[str, Any]) -> list[int]:
    """One token per 4 bytes of each message (and of the tools), message by message: a prompt
    that extends the previous one's messages extends its ids."""
    out: list[int] = []
    if body.get("tools"):
        out += tokenize(orjson.dumps(body["tools"]))
    for msg in body.get("messages") or []:
        out += tokenize(orjson.dumps(msg))
    return out


def engine_answer(body: dict[str, Any], n: int) -> bytes:
    """A vLLM-format completion with one tool call, token ids and logprobs."""
    ids = prompt_ids(body)
    content = f"Looking at step {n}; next I run the tests."
    args = orjson.dumps({"cmd": f"pytest -q tests/test_{n}.py"}).decode()
    out_ids = tokenize((content + args).encode())
    return orjson.dumps({
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
        "prompt_token_ids": ids,
        "choices": [{"index": 0, "finish_reason": "tool_calls", "token_ids": out_ids,
                     "message": {"role": "assistant", "content": content,
                                 "tool_calls": [{"id": f"call_{n}", "type": "function",
                                                 "function": {"name": "shell", "arguments": args}}]},
                     "logprobs": {"content": [{"token": str(t), "logprob": -0.25, "bytes": [], "top_logprobs": []}
                                              for t in out_ids]}}],
        "usage": {"prompt_tokens": len(ids), "completion_tokens": len(out_ids),
                  "total_tokens": len(ids) + len(out_ids)},
    })


# -- the workloads --------------------------------------------------------------------------------
def _text(n_bytes: int, seed: str) -> str:
    words = [f"{seed}{i % 97}" for i in range(n_bytes // 6 + 1)]
    return " ".join(words)[:n_bytes]


def _schema(i: int) -> dict[str, Any]:
    return {"type": "object", "properties": {
        "cmd": {"type": "string", "description": _text(900, f"arg{i}-")},
        "timeout_ms": {"type": "integer", "description": "milliseconds before the command is killed"},
    }, "required": ["cmd"]}


def codex(n_calls: int = 40, final_tokens: int = 60_000, model: str = MODEL) -> Workload:
    instructions = _text(15_000, "instr")
    tools = [{"type": "function", "name": f"tool_{i}", "description": _text(300, f"tool{i}-"),
              "parameters": _schema(i), "strict": False} for i in range(10)]
    head = len(instructions) + len(orjson.dumps(tools))
    step = max(200, (final_tokens * BYTES_PER_TOKEN - head) // n_calls)
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "TASK: Fix the failing test in utils."}]}]
    bodies = []
    for n in range(n_calls):
        body = {"model": model, "instructions": instructions, "tools": tools, "tool_choice": "auto",
                "parallel_tool_calls": False, "input": items, "stream": True, "store": False,
                "reasoning": None, "include": []}
        bodies.append(orjson.dumps(body))
        args = orjson.dumps({"cmd": f"pytest -q tests/test_{n}.py"}).decode()
        items = items + [
            {"type": "function_call", "call_id": f"call_{n}", "name": "tool_0", "arguments": args},
            {"type": "function_call_output", "call_id": f"call_{n}", "output": _text(step, f"out{n}-")},
        ]
    return Workload("codex", "responses", "responses", bodies, True, final_tokens)


def claude(n_calls: int = 40, final_tokens: int = 60_000, model: str = MODEL) -> Workload:
    system = [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
              {"type": "text", "text": _text(12_000, "sys"), "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": f"Tool{i}", "description": _text(400, f"t{i}-"), "input_schema": _schema(i)} for i in range(12)]
    head = len(orjson.dumps(system)) + len(orjson.dumps(tools))
    step = max(200, (final_tokens * BYTES_PER_TOKEN - head) // n_calls)
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "TASK: Refactor the utils module."}]}]
    bodies = []
    for n in range(n_calls):
        sent = [dict(m) for m in history]
        last = dict(sent[-1])
        last["content"] = [*last["content"][:-1], {**last["content"][-1], "cache_control": {"type": "ephemeral"}}]
        sent[-1] = last
        body = {"model": model, "max_tokens": 32000, "system": system, "tools": tools, "messages": sent,
                "stream": True, "metadata": {"user_id": "bench"}}
        bodies.append(orjson.dumps(body))
        tid = f"toolu_{n:04d}"
        history = history + [
            {"role": "assistant", "content": [{"type": "text", "text": f"Step {n}."},
                                              {"type": "tool_use", "id": tid, "name": "Tool0",
                                               "input": {"cmd": f"pytest -q tests/test_{n}.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": _text(step, f"r{n}-")}]},
        ]
    return Workload("claude", "messages", "messages", bodies, True, final_tokens)


def chat(n_calls: int = 20, final_tokens: int = 8_000, model: str = MODEL) -> Workload:
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": _text(200, f"c{i}-"),
                                               "parameters": _schema(i)}} for i in range(4)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": _text(2_000, "react")},
                                      {"role": "user", "content": "TASK: Find the contact's phone number."}]
    head = len(orjson.dumps(tools)) + 2_000
    step = max(100, (final_tokens * BYTES_PER_TOKEN - head) // n_calls)
    bodies = []
    for n in range(n_calls):
        bodies.append(orjson.dumps({"model": model, "messages": messages, "tools": tools, "temperature": 1.0}))
        args = orjson.dumps({"cmd": f"lookup {n}"}).decode()
        messages = messages + [
            {"role": "assistant", "content": f"Step {n}.",
             "tool_calls": [{"id": f"call_{n}", "type": "function", "function": {"name": "tool_0", "arguments": args}}]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": _text(step, f"o{n}-")},
        ]
    return Workload("chat", "chat", "chat/completions", bodies, False, final_tokens)


def workloads(n_calls: int, final_tokens: int) -> list[Workload]:
    return [codex(n_calls, final_tokens), claude(n_calls, final_tokens),
            chat(max(2, n_calls // 2), max(1000, final_tokens // 8))]


TRAJECTORY_MARK = b"TASK:"
NO_DELAY_MARK = b"[nodelay]"


def without_delay(w: Workload) -> Workload:
    """The same workload, answered by the mock engine at once (max-throughput replay)."""
    bodies = [b.replace(TRAJECTORY_MARK, TRAJECTORY_MARK + NO_DELAY_MARK, 1) for b in w.bodies]
    return Workload(w.name, w.api, w.path, bodies, w.stream, w.final_tokens)


# -- storage accounting --------------------------------------------------------------------------
def sqlite_storage(db_path: str, max_calls: int | None = None) -> dict[str, float]:
    """Bytes stored per rollout, what full rows would hold, and the unique content they carry
    (``max_calls``: a rollout's calls from that index on are left out, e.g. extra calls a
    bench made after the workload).

    ``stored``: JSON payload bytes of the rows as written. ``full``: the same calls expanded
    (what every row in full holds). ``unique``: the last call in full plus every earlier
    call's own answer (response, ids, logprobs): each token of the rollout counted once.
    """
    import sqlite3

    from storage.calls import expand_calls, stored_bytes

    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    cols = ("id", "rollout_id", "index", "api", "model", "request", "response", "side_file", "prompt_token_ids",
            "response_token_ids", "response_logprobs", "finish_reason", "usage", "latency_ms", "policy_version",
            "status", "error", "created_at", "base_index", "delta")
    json_cols = {"request", "response", "prompt_token_ids", "response_token_ids", "response_logprobs", "usage", "delta"}
    by_rollout: dict[str, list[dict[str, Any]]] = {}
    quoted = ", ".join(f'"{c}"' for c in cols)
    for row in conn.execute(f"select {quoted} from model_calls where prompt_token_ids is not null "
                            "or side_file is not null"):
        if max_calls is not None and row["index"] >= max_calls:
            continue
        rec = {c: (orjson.loads(row[c]) if c in json_cols and row[c] is not None else row[c]) for c in cols}
        by_rollout.setdefault(rec["rollout_id"], []).append(rec)
    conn.close()
    stored = full = unique = 0.0
    tokens = 0
    for rows in by_rollout.values():
        # bytes in the DB plus those a side file holds for the row (training/proxy/side_files.py)
        stored += sum(stored_bytes(r) + (int(r["side_file"].rpartition(":")[2]) if r["side_file"] else 0)
                      for r in rows)
        expanded = expand_calls(rows)
        full += sum(stored_bytes(r) for r in expanded)
        last = expanded[-1]
        unique += stored_bytes(last) + sum(stored_bytes({k: r[k] for k in ("response", "response_token_ids",
                                                                          "response_logprobs", "usage")})
                                           for r in expanded[:-1])
        tokens += len(last["prompt_token_ids"] or []) + len(last["response_token_ids"] or [])
    n = max(1, len(by_rollout))
    return {"rollouts": len(by_rollout), "stored_mb": stored / n / 1e6, "full_mb": full / n / 1e6,
            "unique_mb": unique / n / 1e6, "tokens": tokens / n}
