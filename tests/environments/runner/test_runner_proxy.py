"""The runner through the real recording proxy (training/proxy) in front of the fake vLLM
engine: the react harness's calls are recorded under the rollout token, and the runner's
finish report lands on the rollout (status, reward)."""

from __future__ import annotations

from pathlib import Path

from environments.records import Outcome
from environments.runner.finish import FINISH_KEY_ENV
from testkit.fakes.vllm import FakeReply, FakeVLLM
from tests.environments.runner.sandbox import make_sandbox, run_runner, write_file_task
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.server import ProxyServer


async def test_react_rollout_is_recorded_and_finished_on_the_proxy(tmp_path: Path, db_engine, sqlite_url) -> None:
    sb = make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")
    with FakeVLLM() as fake:
        fake.script(FakeReply.tool("write_file", {"path": "out.txt", "content": "hello"}), FakeReply.text("done"))
        engine = OpenAICompatEngine(fake.base_url, model=fake.model)
        async with ProxyServer(engine, db_url=sqlite_url) as proxy:
            client = proxy.client()
            try:
                reg = await client.register(task_id="write-hello", harness="react")
                run = await run_runner(sb, "react", extra=["--base-url", reg.base_url, "--token", reg.token,
                                                           "--model", fake.model],
                                       env={FINISH_KEY_ENV: reg.finish_key or ""})
                row = await client.get(reg.rollout_id)
                calls = await client.calls(reg.rollout_id)
            finally:
                await client.aclose()
    assert run.report.status == Outcome.ok and run.report.reward == 1.0
    assert row["status"] == "ok" and row["reward"] == 1.0
    assert len(calls) == 2 and calls[0]["response_token_ids"]
