"""The react harness through the runner against the protocol-faithful fake vLLM server
(testkit/fakes/vllm.py): scripted tool calls solve the task, malformed actions are fed back
and recovered from, engine 400/5xx become policy/infra errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.records import Outcome
from testkit.fakes.vllm import FakeReply, FakeVLLM
from tests.environments.runner.sandbox import make_sandbox, run_runner, write_file_task


@pytest.fixture
def fake():
    with FakeVLLM() as server:
        yield server


@pytest.fixture
def sandbox(tmp_path: Path):
    return make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")


def _args(fake: FakeVLLM, **options) -> list[str]:
    return ["--base-url", fake.base_url, "--token", "tok-123", "--model", fake.model,
            "--harness-options", json.dumps(options)]


def _trajectory(sb) -> dict:
    return json.loads((sb.logs / "agent" / "trajectory.json").read_text())


async def test_native_tool_calls_solve_the_task(fake, sandbox) -> None:
    fake.script(FakeReply.tool("write_file", {"path": "out.txt", "content": "hello"}),
                FakeReply.tool("bash", {"command": "cat out.txt"}),
                FakeReply.text("Done: wrote out.txt"))
    run = await run_runner(sandbox, "react", extra=_args(fake))
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, run.report
    assert len(fake.requests) == 3
    first = fake.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} >= {"bash", "read_file", "write_file"}
    tool_msgs = [m for m in fake.requests[2]["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"].startswith("exit code: 0\nhello")
    traj = _trajectory(sandbox)
    assert traj["result"]["status"] == "finished" and traj["result"]["malformed"] == 0
    assert [s["tool"] for s in traj["steps"]] == ["write_file", "bash"]
    assert (sandbox.logs / "agent" / "final_answer.txt").read_text() == "Done: wrote out.txt"


async def test_malformed_arguments_are_fed_back_and_recovered(fake, sandbox) -> None:
    fake.script(FakeReply.tool("write_file", '{"path": "out.txt", "content": "hel'),
                FakeReply.tool("no_such_tool", {}),
                FakeReply.tool("bash", {"command": "printf hello > out.txt"}),
                FakeReply.text("finished"))
    run = await run_runner(sandbox, "react", extra=_args(fake))
    assert run.report.status == Outcome.ok and run.report.reward == 1.0
    second = fake.requests[1]["messages"]
    assert "not a valid JSON object" in second[-1]["content"] and second[-1]["role"] == "tool"
    assert "unknown tool 'no_such_tool'" in fake.requests[2]["messages"][-1]["content"]
    assert _trajectory(sandbox)["result"]["malformed"] == 1


async def test_text_protocol_with_malformed_action_recovers(fake, sandbox) -> None:
    fake.script(FakeReply.text("I will now create the file."),
                FakeReply.text('Thought: write it.\nAction: {"tool": "write_file", "args": '
                               '{"path": "out.txt", "content": "hello"}}'),
                FakeReply.text("Final Answer: out.txt written"))
    run = await run_runner(sandbox, "react", extra=_args(fake, mode="text"))
    assert run.report.status == Outcome.ok and run.report.reward == 1.0
    assert "tools" not in fake.requests[0]
    assert "Action:" in fake.requests[0]["messages"][0]["content"]
    feedback = fake.requests[1]["messages"][-1]
    assert feedback["role"] == "user" and feedback["content"].startswith("Observation: Error: no action found")
    traj = _trajectory(sandbox)
    assert traj["mode"] == "text" and traj["result"]["malformed"] == 1


async def test_auto_mode_parses_text_actions_from_a_native_endpoint(fake, sandbox) -> None:
    fake.script(FakeReply.text('Action: {"name": "bash", "arguments": "{\\"command\\": \\"printf hello > out.txt\\"}"}'),
                FakeReply.text("All done."))
    run = await run_runner(sandbox, "react", extra=_args(fake))
    assert run.report.reward == 1.0
    assert fake.requests[1]["messages"][-1]["content"].startswith("Observation: exit code: 0")


async def test_context_overflow_is_policy_error(fake, sandbox) -> None:
    fake.script(FakeReply.tool("bash", {"command": "ls"}),
                FakeReply.failure(400, "This model's maximum context length is 2048 tokens; your prompt has 5000"))
    run = await run_runner(sandbox, "react", extra=_args(fake))
    r = run.report
    assert (r.status, r.error_kind, r.reward) == (Outcome.policy_error, "context_overflow", 0.0)
    assert "maximum context length" in (r.error or "")


async def test_engine_5xx_is_infra_engine_error(fake, sandbox) -> None:
    fake.script(*[FakeReply.failure(503, "engine down")] * 3)
    run = await run_runner(sandbox, "react", extra=_args(fake))
    assert (run.report.status, run.report.error_kind) == (Outcome.infra_error, "engine_error")


async def test_step_limit_stops_the_loop_and_verifies(fake, sandbox) -> None:
    fake.responder = lambda body: FakeReply.tool("bash", {"command": "true"})
    run = await run_runner(sandbox, "react", extra=_args(fake, max_steps=3))
    assert run.report.status == Outcome.ok and run.report.reward == 0.0
    assert len(fake.requests) == 3
    assert _trajectory(sandbox)["result"]["status"] == "step_limit"


CLAW_TASK = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples" / "claw-gmail-invoice-reply"


@pytest.mark.skipif(not CLAW_TASK.is_dir(), reason="claw example task not present")
async def test_claw_tools_are_native_tools_routed_to_the_services(fake, tmp_path: Path) -> None:
    sb = make_sandbox(CLAW_TASK, tmp_path / "sb")
    body = "Hi Dana,\nInvoice INV-2041 totals USD 4,350.00, due 2026-03-15.\nBest, Alex"
    fake.script(FakeReply.tool("gmail_search", {"query": "INV-2041"}),
                FakeReply.tool("gmail_reply", {"id": "m-101", "bogus": 1}),
                FakeReply.tool("gmail_reply", {"id": "m-101", "body": body}),
                FakeReply.tool("gmail_label", {"id": "m-101", "add": ["Billing"]}),
                FakeReply.text("Replied and labelled."))
    run = await run_runner(sb, "react", extra=_args(fake))
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, run.report
    names = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert {"gmail_search", "gmail_reply", "gmail_label", "bash"} <= names
    assert "m-102" in fake.requests[1]["messages"][-1]["content"]
    rejected = fake.requests[2]["messages"][-1]["content"]
    assert rejected.startswith("Error (HTTP 422)") and "bogus" in rejected


async def test_unparsed_hermes_tool_call_text_is_not_a_final_answer(fake, sandbox) -> None:
    fake.script(FakeReply.text('<tool_call>\n{"name": "write_file", "arguments": {"path": "out.txt", '
                               '"content": "hello"}}\n</tool_call>'),
                FakeReply.text("<tool_call>\n{oops not json\n</tool_call>"),
                FakeReply.text("Done."))
    run = await run_runner(sandbox, "react", extra=_args(fake))
    assert run.report.reward == 1.0
    assert len(fake.requests) == 3
    assert fake.requests[2]["messages"][-1]["content"].startswith("Observation: Error:")
    assert _trajectory(sandbox)["result"]["malformed"] == 1
