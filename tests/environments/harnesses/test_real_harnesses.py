"""Slow: the real Codex CLI, Claude Code, OpenClaw and mini-swe-agent, launched by the runner with their adapters,
complete the hand-made task against scripted fake model endpoints (no proxy needed):
Codex over the Responses API (scripted_responses.py), Claude Code over the Messages API
(scripted_messages.py), OpenClaw and mini-swe-agent over chat completions
(testkit/fakes/vllm.py). Skipped when scripts/install-harnesses.sh has not installed them.
The claw cases run a generated contact-lookup task: the skill CLI call through the harness's
shell tool, then the scripted final reply, which must reach ``<logs>/agent/final_answer.txt``
(the harness's final-reply step) for the verifier's answer checks to pass."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from environments.harnesses.binaries import find_binary
from environments.records import Outcome
from testkit.fakes.vllm import FakeReply, FakeVLLM
from tests.environments.harnesses.scripted_messages import ScriptedMessages
from tests.environments.harnesses.scripted_responses import ScriptedResponses, Turn
from tests.environments.runner.sandbox import make_sandbox, run_runner, write_file_task

pytestmark = pytest.mark.slow


@pytest.fixture
def sandbox(tmp_path: Path):
    return make_sandbox(write_file_task(tmp_path / "src"), tmp_path / "sb")


@pytest.mark.skipif(find_binary("codex") is None, reason="codex not installed (scripts/install-harnesses.sh)")
async def test_codex_runs_a_shell_tool_call_and_completes(sandbox) -> None:
    with ScriptedResponses() as fake:
        fake.script(Turn.call("exec_command", {"cmd": "printf hello > out.txt"}), Turn.say("Created out.txt."))
        run = await run_runner(sandbox, "codex", timeout=300,
                               extra=["--base-url", fake.base_url, "--token", "tok-codex", "--model", "fake-policy",
                                      "--agent-timeout", "180"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.report.logs)
    assert len(fake.requests) == 2
    first, second = fake.requests
    assert first["model"] == "fake-policy" and first["stream"] is True
    assert any(t.get("name") == "exec_command" for t in first["tools"])
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert outputs, "the tool result must be sent back in the next turn"
    assert (sandbox.logs / "agent" / "codex-last-message.txt").read_text().strip() == "Created out.txt."
    assert (sandbox.logs / "agent" / "final_answer.txt").read_text() == "Created out.txt."  # the runner's post-run step


@pytest.mark.skipif(find_binary("mini") is None, reason="mini-swe-agent not installed (scripts/install-harnesses.sh)")
async def test_mini_swe_agent_runs_bash_and_submits(sandbox) -> None:
    with FakeVLLM() as fake:
        fake.script(FakeReply.tool("bash", {"command": "printf hello > out.txt"}),
                    FakeReply.tool("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
                                   content="Wrote hello to out.txt."))
        run = await run_runner(sandbox, "mini-swe-agent", timeout=400,
                               extra=["--base-url", fake.base_url, "--token", "tok-mini", "--model", fake.model,
                                      "--agent-timeout", "300"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.report.logs)
    assert len(fake.requests) == 2
    assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == ["bash"]
    assert (sandbox.logs / "agent" / "mini-traj.json").is_file()
    # a bare submit (empty submission): the final reply is the submitting message's text
    assert (sandbox.logs / "agent" / "final_answer.txt").read_text() == "Wrote hello to out.txt."


@pytest.mark.skipif(find_binary("claude") is None, reason="claude not installed (scripts/install-harnesses.sh)")
async def test_claude_code_runs_bash_and_completes(sandbox) -> None:
    with ScriptedMessages() as fake:
        fake.script(Turn.call("Bash", {"command": "printf hello > out.txt", "description": "write the file"}),
                    Turn.say("Created out.txt."))
        run = await run_runner(sandbox, "claude-code", timeout=300,
                               extra=["--base-url", f"{fake.url}/v1", "--token", "tok-claude", "--model", "fake-policy",
                                      "--agent-timeout", "240"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.report.logs)
    assert len(fake.requests) == 2
    assert all(r["model"] == "fake-policy" for r in fake.requests)
    result = fake.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is False
    assert (sandbox.logs / "agent" / "final_answer.txt").read_text() == "Created out.txt."  # from its result object


@pytest.mark.skipif(find_binary("openclaw") is None or find_binary("node24") is None,
                    reason="openclaw / Node 24 not installed (scripts/install-harnesses.sh)")
async def test_openclaw_runs_exec_and_completes(sandbox) -> None:
    # OpenClaw needs 12-16 s on an idle 2-core machine, minutes under load: generous timeouts.
    with FakeVLLM() as fake:
        fake.script(FakeReply.tool("exec", {"command": "printf hello > out.txt"}), FakeReply.text("done"))
        run = await run_runner(sandbox, "openclaw", timeout=580,
                               extra=["--base-url", fake.base_url, "--token", "tok-oc", "--model", fake.model,
                                      "--agent-timeout", "540"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.report.logs)
    assert len(fake.requests) == 2 and fake.requests[0]["stream"] is True
    assert "exec" in {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert (sandbox.logs / "agent" / "final_answer.txt").read_text() == "done"  # from its --json envelope


CLAW_TASK = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples" / "claw-gmail-invoice-reply"


@pytest.mark.skipif(find_binary("codex") is None or not CLAW_TASK.is_dir(), reason="codex or claw example missing")
async def test_codex_solves_a_claw_task_through_the_skill_cli(tmp_path: Path) -> None:
    sb = make_sandbox(CLAW_TASK, tmp_path / "sb")
    reply = ('claw-call gmail_reply \'{"id": "m-101", "body": "Hi Dana, invoice INV-2041 '
             'totals USD 4,350.00 and is due on 2026-03-15. Best, Alex"}\'')
    label = 'claw-call gmail_label \'{"id": "m-101", "add": ["Billing"]}\''
    with ScriptedResponses() as fake:
        fake.script(Turn.call("exec_command", {"cmd": reply}), Turn.call("exec_command", {"cmd": label}),
                    Turn.say("Replied and labelled."))
        run = await run_runner(sb, "codex", timeout=300,
                               extra=["--base-url", fake.base_url, "--token", "tok", "--model", "fake-policy",
                                      "--agent-timeout", "180"])
    assert run.report.status == Outcome.ok and run.report.reward == 1.0, (run.report, run.report.logs)
    first_input = str(fake.requests[0]["input"])
    assert "SKILL.md" in first_input and "claw-gmail" in first_input


@dataclass
class LookupTask:
    sandbox: object
    search: str  # the skill CLI call that finds the contact
    final: str  # the oracle's final reply (it holds what the answer checks look for)


def lookup_task(tmp_path: Path) -> LookupTask:
    """A generated contact-lookup claw task (0.6 of its reward is answer checks on final_answer.txt)."""
    from synthesis.procedural.render import write_generated

    [task] = write_generated(tmp_path / "tasks", "contact-lookup", range(10_000, 10_001))
    call, answer = json.loads((task.path / "solution" / "plan.json").read_text())
    search = f"claw-call {call['tool']} {shlex.quote(json.dumps(call['arguments']))}"  # as the SKILL.md files teach
    return LookupTask(make_sandbox(task.path, tmp_path / "sb"), search, answer["final"])


ANSWER_CHECKS = {"names_person": True, "right_answer": True}  # 0.6 of the reward, read from final_answer.txt
SEARCH_CHECKS = {"searched": True, "searched_for_person": True}  # 0.4, the skill CLI call in the services' audit


def assert_answered(run, sb, final: str) -> dict[str, bool]:
    """The final reply reached final_answer.txt and passed the answer checks; all the checks."""
    assert run.report.status == Outcome.ok, (run.report, run.report.logs)
    assert (sb.logs / "agent" / "final_answer.txt").read_text() == final  # the runner's post-run step
    checks = json.loads((sb.logs / "verifier" / "checks.json").read_text())["checks"]
    assert {name: checks.get(name) for name in ANSWER_CHECKS} == ANSWER_CHECKS, checks
    return checks


@pytest.mark.skipif(find_binary("claude") is None, reason="claude not installed (scripts/install-harnesses.sh)")
async def test_claude_code_final_reply_passes_a_claw_tasks_answer_checks(tmp_path: Path) -> None:
    task = lookup_task(tmp_path)
    with ScriptedMessages() as fake:
        fake.script(Turn.call("Bash", {"command": task.search, "description": "search contacts"}), Turn.say(task.final))
        run = await run_runner(task.sandbox, "claude-code", timeout=300,
                               extra=["--base-url", f"{fake.url}/v1", "--token", "tok-claude", "--model", "fake-policy",
                                      "--agent-timeout", "240"])
    assert len(fake.requests) == 2
    checks = assert_answered(run, task.sandbox, task.final)
    assert checks == {**SEARCH_CHECKS, **ANSWER_CHECKS} and run.report.reward == 1.0, (checks, run.report)


@pytest.mark.skipif(find_binary("openclaw") is None or find_binary("node24") is None,
                    reason="openclaw / Node 24 not installed (scripts/install-harnesses.sh)")
async def test_openclaw_final_reply_passes_a_claw_tasks_answer_checks(tmp_path: Path) -> None:
    task = lookup_task(tmp_path)
    with FakeVLLM() as fake:
        fake.script(FakeReply.tool("exec", {"command": task.search}), FakeReply.text(task.final))
        run = await run_runner(task.sandbox, "openclaw", timeout=580,
                               extra=["--base-url", fake.base_url, "--token", "tok-oc", "--model", fake.model,
                                      "--agent-timeout", "540"])
    assert len(fake.requests) == 2
    checks = assert_answered(run, task.sandbox, task.final)
    # OpenClaw's exec strips PYTHONPATH from the command's env (its host-env security policy):
    # `claw-call` (first on the inherited PATH, Harness.plan) needs none, so the search reaches
    # the services and every check passes.
    tool_result = next(m for m in fake.requests[1]["messages"] if m.get("role") == "tool")["content"]
    assert '"contacts"' in tool_result and "No module named" not in tool_result, tool_result
    assert checks == {**SEARCH_CHECKS, **ANSWER_CHECKS} and run.report.reward == 1.0, (checks, run.report)
