"""Recorded rollouts as Harbor's trajectory format, ATIF (for Harbor's viewers; issue 16).

One rollout → one ATIF-v1.6 document: its last successful chat-API call's conversation (the
request's messages, then the reply) as steps — ``system`` / ``user`` messages as such, each
assistant message an ``agent`` step with its tool calls, each ``tool`` message an observation
result of the agent step that called it. The k-th agent step carries the k-th call's token
ids, logprobs and usage (the conversation is linear: each call answers the one before).
``final_metrics`` sums the calls' usage; ``extra`` holds reward, status and verifier metrics.
Only the chat API (``/chat/completions``) is exported; a rollout recorded through another
API is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from storage.calls import expand_calls
from storage.db import session_scope
from storage.models import ModelCall, Rollout

ATIF_VERSION = "ATIF-v1.6"


class AtifError(ValueError):
    """The rollout cannot be exported (one line naming it and why)."""


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
        return "\n".join(parts)
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {"raw": raw}
    return value if isinstance(value, dict) else {"value": value}


def _metrics(call: dict[str, Any]) -> dict[str, Any]:
    usage = call.get("usage") or {}
    out = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
           "prompt_token_ids": call.get("prompt_token_ids"), "completion_token_ids": call.get("response_token_ids"),
           "logprobs": call.get("response_logprobs")}
    return {k: v for k, v in out.items() if v is not None}


def trajectory(rollout: Rollout, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The ATIF document of one rollout and its (expanded) calls."""
    ok = [c for c in calls if c.get("status", "ok") == "ok" and c.get("response")]
    other = sorted({c["api"] for c in ok if c.get("api") != "chat"})
    if other:
        raise AtifError(f"rollout {rollout.id}: calls through the {', '.join(other)} API are not exported to ATIF "
                        "(chat API only)")
    steps: list[dict[str, Any]] = []
    if ok:
        last = ok[-1]
        reply = ((last["response"].get("choices") or [{}])[0]).get("message") or {}
        messages = [*(last["request"] or {}).get("messages", []), reply]
        agent_index = 0
        for msg in messages:
            role = msg.get("role")
            if role == "tool":
                owner = next((s for s in reversed(steps) if s["source"] == "agent"), None)
                if owner is None:
                    continue
                owner.setdefault("observation", {"results": []})["results"].append(
                    {"source_call_id": msg.get("tool_call_id"), "content": _text(msg.get("content"))})
                continue
            step: dict[str, Any] = {"step_id": len(steps) + 1, "message": _text(msg.get("content"))}
            if role == "assistant":
                call = ok[agent_index] if agent_index < len(ok) else None
                agent_index += 1
                step.update(source="agent", model_name=(call or {}).get("model") or rollout.model)
                tool_calls = [{"tool_call_id": tc.get("id") or f"call_{len(steps)}_{i}",
                               "function_name": (tc.get("function") or {}).get("name", ""),
                               "arguments": _arguments((tc.get("function") or {}).get("arguments"))}
                              for i, tc in enumerate(msg.get("tool_calls") or [])]
                if tool_calls:
                    step["tool_calls"] = tool_calls
                if call is not None and _metrics(call):
                    step["metrics"] = _metrics(call)
            else:
                step["source"] = "system" if role in ("system", "developer") else "user"
            steps.append(step)
        for step in steps:  # ATIF: an observation only answers tool calls of its own step
            ids = {tc["tool_call_id"] for tc in step.get("tool_calls", [])}
            if "observation" in step:
                for result in step["observation"]["results"]:
                    if result["source_call_id"] not in ids:
                        result["source_call_id"] = None
    usage = [c.get("usage") or {} for c in ok]
    meta = rollout.meta or {}
    return {
        "schema_version": ATIF_VERSION,
        "session_id": rollout.id,
        "agent": {"name": rollout.harness or "unknown", "version": "openforge", "model_name": rollout.model},
        "steps": steps,
        "final_metrics": {"total_prompt_tokens": sum(int(u.get("prompt_tokens") or 0) for u in usage),
                          "total_completion_tokens": sum(int(u.get("completion_tokens") or 0) for u in usage),
                          "total_steps": len(steps)},
        "extra": {"task_id": rollout.task_id, "status": rollout.status, "reward": rollout.reward,
                  "metrics": meta.get("metrics", {}), "n_calls": len(calls)},
    }


def export_atif(engine: Engine, rollout_ids: list[str], out_dir: Path) -> list[Path]:
    """Write ``<out_dir>/<rollout_id>.trajectory.json`` for each rollout; raises AtifError."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with session_scope(engine) as session:
        for rid in rollout_ids:
            row = session.get(Rollout, rid)
            if row is None:
                raise AtifError(f"rollout {rid}: not in the DB")
            calls = expand_calls(session.scalars(select(ModelCall).where(ModelCall.rollout_id == rid)))
            doc = trajectory(row, calls)
            path = out_dir / f"{rid}.trajectory.json"
            path.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
            paths.append(path)
    return paths
