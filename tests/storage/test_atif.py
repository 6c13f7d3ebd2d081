"""Recorded rollouts exported as ATIF (storage/atif.py): the conversation of the last call as
steps, tool results as observations of the step that called them, each call's token ids on
its agent step; validated with the real Harbor's ``Trajectory`` model where installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environments.taskdir.real_harbor import (
    HarborUnavailable,
    harbor_python,
    harbor_validate_atif,
)
from storage.atif import AtifError, export_atif
from storage.db import session_scope
from storage.models import ModelCall, Rollout

SYSTEM = {"role": "system", "content": "You are an agent."}
USER = {"role": "user", "content": [{"type": "text", "text": "Write hello to out.txt"}]}
CALL_1 = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "echo hello > out.txt"}'}}]}
TOOL_1 = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
FINAL = {"role": "assistant", "content": "Done."}


def _record(engine, rid: str = "r1", api: str = "chat") -> None:
    with session_scope(engine) as s:
        s.add(Rollout(id=rid, task_id="t", harness="react", model="policy", status="ok", reward=1.0,
                      meta={"metrics": {"reward": 1.0, "exists": 1.0}}))
        s.add(ModelCall(rollout_id=rid, index=0, api=api, model="policy",
                        request={"messages": [SYSTEM, USER]}, response={"choices": [{"message": CALL_1}]},
                        prompt_token_ids=[1, 2, 3], response_token_ids=[4, 5], response_logprobs=[-0.1, -0.2],
                        usage={"prompt_tokens": 3, "completion_tokens": 2}))
        s.add(ModelCall(rollout_id=rid, index=1, api=api, model="policy",
                        request={"messages": [SYSTEM, USER, CALL_1, TOOL_1]}, response={"choices": [{"message": FINAL}]},
                        prompt_token_ids=[1, 2, 3, 4, 5, 6], response_token_ids=[7], response_logprobs=[-0.3],
                        usage={"prompt_tokens": 6, "completion_tokens": 1}))


def test_rollout_becomes_atif_steps(db_engine, tmp_path: Path) -> None:
    _record(db_engine)
    [path] = export_atif(db_engine, ["r1"], tmp_path)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == "ATIF-v1.6" and doc["session_id"] == "r1"
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent"]
    assert [s["step_id"] for s in doc["steps"]] == [1, 2, 3, 4]
    call = doc["steps"][2]
    assert call["tool_calls"] == [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "echo hello > out.txt"}}]
    assert call["observation"] == {"results": [{"source_call_id": "c1", "content": "ok"}]}
    assert call["metrics"]["completion_token_ids"] == [4, 5] and doc["steps"][3]["metrics"]["logprobs"] == [-0.3]
    assert doc["final_metrics"] == {"total_prompt_tokens": 9, "total_completion_tokens": 3, "total_steps": 4}
    assert doc["extra"]["reward"] == 1.0 and doc["extra"]["metrics"] == {"reward": 1.0, "exists": 1.0}
    try:
        python = harbor_python()
    except HarborUnavailable as exc:
        print(f"SKIP reason: {exc}")
        pytest.skip(str(exc))
    assert harbor_validate_atif([path], python=python)[str(path)] == {"ok": True, "steps": 4,
                                                                       "schema_version": "ATIF-v1.6"}


def test_other_apis_and_unknown_rollouts_are_one_line(db_engine, tmp_path: Path) -> None:
    _record(db_engine, "r2", api="messages")
    with pytest.raises(AtifError, match="rollout r2: calls through the messages API are not exported"):
        export_atif(db_engine, ["r2"], tmp_path)
    with pytest.raises(AtifError, match="rollout nope: not in the DB"):
        export_atif(db_engine, ["nope"], tmp_path)


def test_cli_writes_the_files(db_engine, tmp_path: Path) -> None:
    _record(db_engine)
    result = subprocess.run([sys.executable, "-m", "cli", "export-atif", "r1", "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=os.environ.copy(), timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "r1.trajectory.json").is_file()
