"""``openforge proxy serve`` as a process: it serves, records, and loses no acknowledged call
when killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import openai
import pytest

from storage.db import make_engine, session_scope
from storage.models import ModelCall, Rollout
from testkit.fakes.vllm import FakeVLLM
from training.proxy.client import ProxyAdminClient


@pytest.mark.slow
async def test_serve_records_and_survives_sigkill(fake_vllm: FakeVLLM, sqlite_url: str) -> None:
    proc = subprocess.Popen(  # noqa: ASYNC220 - a server process the test outlives
        [sys.executable, "-m", "cli", "proxy", "serve", "--engine", fake_vllm.base_url, "--port", "0",
         "--db", sqlite_url, "--admin-key", "sekret"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        info = json.loads(line)
        assert info["admin_key"] == "sekret"
        async with ProxyAdminClient(info["url"], "sekret") as admin:
            reg = await admin.register(task_id="t-cli", harness="sdk")
            client = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
            for i in range(3):
                out = await client.responses.create(model="m", input=f"q{i}")
                assert out.output_text == f"echo: q{i}"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    engine = make_engine(sqlite_url)
    with session_scope(engine) as s:
        rows = s.query(ModelCall).filter_by(rollout_id=reg.rollout_id).order_by(ModelCall.index).all()
        assert [r.index for r in rows] == [0, 1, 2]
        assert all(r.api == "responses" and r.prompt_token_ids for r in rows)
        assert s.get(Rollout, reg.rollout_id).n_calls == 3
    engine.dispose()
