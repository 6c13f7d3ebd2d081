"""The post-run final-reply step: a third-party harness declares where its final reply lands
(mini-swe-agent: its trajectory's submission; Codex: its ``-o`` last-message file; Claude Code
and OpenClaw: the result object they print on stdout, which the runner captures in the agent
log) and the runner copies it to ``<logs>/agent/final_answer.txt`` without following planted
symlinks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.harnesses import HarnessContext, get_harness
from environments.harnesses.adapters.mini_swe_agent import submitted_reply
from environments.harnesses.base import AGENT_LOG_FILE, FINAL_ANSWER_FILE, deliver_final_reply


@pytest.fixture
def ctx(tmp_path: Path) -> HarnessContext:
    logs = tmp_path / "logs" / "agent"
    logs.mkdir(parents=True)
    return HarnessContext(instruction="Find Hana.", task_dir=tmp_path / "task", workspace=tmp_path / "ws",
                          logs_dir=logs, home=tmp_path / "home")


def mini_trajectory(exit_status: str, submission: str, last_assistant: str | None = "Submitting.") -> dict:
    """The shape minisweagent 2.4.6's DefaultAgent.serialize() writes with ``-o``."""
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Please solve this issue: Find Hana."},
                {"role": "assistant", "content": "Searching.", "tool_calls": [{"id": "c1"}]},
                {"role": "tool", "content": "{}"}]
    if last_assistant is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": last_assistant}]})
    messages.append({"role": "exit", "content": submission, "extra": {"exit_status": exit_status, "submission": submission}})
    return {"info": {"exit_status": exit_status, "submission": submission, "mini_version": "2.4.6"},
            "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}


def test_mini_reply_is_the_submission_else_the_submitting_message() -> None:
    assert submitted_reply(mini_trajectory("Submitted", "Hana's phone is 770-555-7190.\n")) == "Hana's phone is 770-555-7190."
    assert submitted_reply(mini_trajectory("Submitted", "", "The number is 770-555-7190.")) == "The number is 770-555-7190."
    assert submitted_reply(mini_trajectory("LimitsExceeded", "", "The number is 1.")) is None
    assert submitted_reply(mini_trajectory("RepeatedFormatError", "")) is None
    assert submitted_reply({}) is None


def test_mini_reply_reaches_final_answer_txt(ctx: HarnessContext) -> None:
    (ctx.logs_dir / "mini-traj.json").write_text(json.dumps(mini_trajectory("Submitted", "770-555-7190\n")))
    (ctx.logs_dir / FINAL_ANSWER_FILE).write_text("something the agent wrote")
    assert deliver_final_reply(get_harness("mini-swe-agent"), ctx)
    assert (ctx.logs_dir / FINAL_ANSWER_FILE).read_text() == "770-555-7190"


def test_no_submission_no_reply(ctx: HarnessContext) -> None:
    mini = get_harness("mini-swe-agent")
    assert not deliver_final_reply(mini, ctx)  # no trajectory at all (the binary crashed early)
    (ctx.logs_dir / "mini-traj.json").write_text(json.dumps(mini_trajectory("LimitsExceeded", "")))
    assert not deliver_final_reply(mini, ctx)
    (ctx.logs_dir / "mini-traj.json").write_text("{not json")
    assert not deliver_final_reply(mini, ctx)
    assert not (ctx.logs_dir / FINAL_ANSWER_FILE).exists()


def test_planted_symlinks_are_not_followed(ctx: HarnessContext, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(mini_trajectory("Submitted", "the secret")))
    (ctx.logs_dir / "mini-traj.json").symlink_to(secret)
    assert not deliver_final_reply(get_harness("mini-swe-agent"), ctx)  # not read through the link

    (ctx.logs_dir / "mini-traj.json").unlink()
    (ctx.logs_dir / "mini-traj.json").write_text(json.dumps(mini_trajectory("Submitted", "770-555-7190")))
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (ctx.logs_dir / FINAL_ANSWER_FILE).symlink_to(victim)
    assert deliver_final_reply(get_harness("mini-swe-agent"), ctx)
    assert victim.read_text() == "untouched"  # the link was replaced, not written through
    path = ctx.logs_dir / FINAL_ANSWER_FILE
    assert not path.is_symlink() and path.read_text() == "770-555-7190"


def test_codex_reply_is_its_last_message_file(ctx: HarnessContext) -> None:
    codex = get_harness("codex")
    assert not deliver_final_reply(codex, ctx)
    (ctx.logs_dir / "codex-last-message.txt").write_text("Hana's phone is 770-555-7190.\n")
    assert deliver_final_reply(codex, ctx)
    assert (ctx.logs_dir / FINAL_ANSWER_FILE).read_text() == "Hana's phone is 770-555-7190."


def test_a_harness_that_writes_the_file_itself_is_left_alone(ctx: HarnessContext) -> None:
    (ctx.logs_dir / FINAL_ANSWER_FILE).write_text("react's reply")
    assert not deliver_final_reply(get_harness("react"), ctx)
    assert (ctx.logs_dir / FINAL_ANSWER_FILE).read_text() == "react's reply"


# -- Claude Code and OpenClaw: the result object they print on stdout (the agent log) ----------

ESC = "\x1b"
#: OpenClaw's stderr log lines (ANSI-coloured even without a TTY), as captured from a real run.
OPENCLAW_LOG_LINES = (
    f"{ESC}[34m[session-sqlite]{ESC}[39m {ESC}[33mslow SQLite reclamation Worker operation pid=4860 "
    f"threadId=0 isMainThread=true reclamationKind=maintenance-plan outcome=resolved{ESC}[39m\n"
    f"{ESC}[33m[agent/embedded]{ESC}[39m {ESC}[36mtool-search: cataloged 38 tools behind compact prompt "
    f"surface{ESC}[39m\n"
    f"{ESC}[33m[agents/agent-command]{ESC}[39m {ESC}[36m[agent] run fc23910a ended with stopReason=stop{ESC}[39m\n"
)


def openclaw_envelope(final: str, ok: bool = True) -> str:
    """``agent exec --json``'s envelope as OpenClaw 2026.9.6 prints it (pretty-printed, 2 spaces)."""
    envelope = {"ok": ok, "status": "ok" if ok else "error", "final": final,
                "payloads": [{"text": final, "mediaUrl": None}] if final else [],
                "usage": {"input": 73061, "output": 68, "cacheRead": 0, "cacheWrite": 0, "total": 73129,
                          "cost": {"total": 0}},
                "codeModeEngaged": False, "assistantTurns": 2,
                "toolSummary": {"calls": 1, "tools": ["exec"], "failures": 0},
                "model": "fake-policy", "provider": "openforge", "sessionId": "fc23910a"}
    if not ok:
        envelope["error"] = {"message": "Agent run failed", "kind": "agent_error"}
    return json.dumps(envelope, indent=2) + "\n"


def claude_result(text: str | None, *, subtype: str = "success", is_error: bool = False) -> dict:
    """Claude Code 2.1.197's ``--output-format json`` result object (fields as a real run prints them)."""
    result = {"type": "result", "subtype": subtype, "is_error": is_error, "api_error_status": None,
              "duration_ms": 281, "num_turns": 2, "stop_reason": "end_turn", "session_id": "06e7c7fa",
              "total_cost_usd": 0.0015, "usage": {"input_tokens": 200, "output_tokens": 20,
                                                  "server_tool_use": {"web_search_requests": 0}},
              "permission_denials": [], "terminal_reason": "completed", "uuid": "6e04328b"}
    if text is not None:
        result["result"] = text
    return result


def write_agent_log(ctx: HarnessContext, text: str) -> None:
    (ctx.logs_dir / AGENT_LOG_FILE).write_text(text, encoding="utf-8")


def test_openclaw_reply_is_the_final_of_its_envelope_after_coloured_log_lines(ctx: HarnessContext) -> None:
    write_agent_log(ctx, OPENCLAW_LOG_LINES + openclaw_envelope("Pavel Okafor's company is Cedar Health Partners.\n"))
    assert deliver_final_reply(get_harness("openclaw"), ctx)
    assert (ctx.logs_dir / FINAL_ANSWER_FILE).read_text() == "Pavel Okafor's company is Cedar Health Partners."


def test_openclaw_last_envelope_wins_and_stderr_after_it_is_ignored(ctx: HarnessContext) -> None:
    openclaw = get_harness("openclaw")
    write_agent_log(ctx, openclaw_envelope("the first") + OPENCLAW_LOG_LINES + openclaw_envelope("the second")
                    + f"{ESC}[31mwarning: cleanup slow{ESC}[39m\n{{\"not\": \"an envelope\"}}\n")
    assert openclaw.final_reply(ctx) == "the second"
    # a failed run's envelope (ok: false) is the last one: no reply, not the earlier success's
    write_agent_log(ctx, openclaw_envelope("the first") + OPENCLAW_LOG_LINES + openclaw_envelope("partial", ok=False)
                    + "Agent run failed\n")
    assert openclaw.final_reply(ctx) is None


def test_openclaw_without_a_complete_envelope_has_no_reply(ctx: HarnessContext) -> None:
    openclaw = get_harness("openclaw")
    assert not deliver_final_reply(openclaw, ctx)  # no agent log at all
    write_agent_log(ctx, OPENCLAW_LOG_LINES)  # crashed before printing one
    assert not deliver_final_reply(openclaw, ctx)
    envelope = openclaw_envelope("Cedar Health Partners")
    write_agent_log(ctx, OPENCLAW_LOG_LINES + envelope[: len(envelope) // 2])  # killed mid-print
    assert not deliver_final_reply(openclaw, ctx)
    assert not (ctx.logs_dir / FINAL_ANSWER_FILE).exists()


def test_claude_code_reply_is_result_of_its_result_object(ctx: HarnessContext) -> None:
    claude = get_harness("claude-code")
    write_agent_log(ctx, "npm warn something\n" + json.dumps(claude_result("Cedar Health Partners.\n")) + "\n")
    assert deliver_final_reply(claude, ctx)
    assert (ctx.logs_dir / FINAL_ANSWER_FILE).read_text() == "Cedar Health Partners."
    # --verbose --output-format json: one line holding every message, the result last
    messages = [{"type": "system", "subtype": "init", "tools": ["Bash"]},
                {"type": "assistant", "message": {"content": [{"type": "text", "text": "Looking."}]}},
                claude_result("from the array")]
    write_agent_log(ctx, json.dumps(messages) + "\n")
    assert claude.final_reply(ctx) == "from the array"
    # --output-format stream-json: one object per line, the result last
    write_agent_log(ctx, "".join(json.dumps(m) + "\n" for m in messages[:2]) + json.dumps(claude_result("streamed")))
    assert claude.final_reply(ctx) == "streamed"


def test_claude_code_last_result_wins_and_errors_deliver_nothing(ctx: HarnessContext) -> None:
    claude = get_harness("claude-code")
    write_agent_log(ctx, json.dumps(claude_result("first")) + "\n" + json.dumps(claude_result("second")) + "\n")
    assert claude.final_reply(ctx) == "second"
    # an API failure: subtype success but is_error, result is Claude Code's own message (real output)
    api_error = claude_result("API Error: Unable to connect to API (ConnectionRefused)", is_error=True)
    write_agent_log(ctx, json.dumps(claude_result("first")) + "\n" + json.dumps(api_error) + "\n")
    assert claude.final_reply(ctx) is None
    write_agent_log(ctx, json.dumps(claude_result(None, subtype="error_max_turns", is_error=True)) + "\n")
    assert claude.final_reply(ctx) is None


def test_claude_code_without_a_complete_result_has_no_reply(ctx: HarnessContext) -> None:
    claude = get_harness("claude-code")
    assert claude.final_reply(ctx) is None  # no agent log
    line = json.dumps(claude_result("Cedar Health Partners."))
    write_agent_log(ctx, "Error: something broke\n" + line[:-20])  # cut off mid-print
    assert claude.final_reply(ctx) is None
    write_agent_log(ctx, json.dumps({"type": "assistant", "result": "not a result object"}) + "\n")
    assert claude.final_reply(ctx) is None


@pytest.mark.parametrize("name", ["claude-code", "openclaw"])
def test_a_symlinked_agent_log_is_not_read(name: str, ctx: HarnessContext, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text(json.dumps(claude_result("secret")) + "\n" + openclaw_envelope("secret"))
    (ctx.logs_dir / AGENT_LOG_FILE).symlink_to(elsewhere)
    assert not deliver_final_reply(get_harness(name), ctx)
    assert not (ctx.logs_dir / FINAL_ANSWER_FILE).exists()


def test_a_later_step_reads_only_its_own_part_of_the_agent_log(ctx: HarnessContext, tmp_path: Path) -> None:
    """Every step of a multi-step task appends to the agent log: a step that crashed before
    printing its result must not deliver the previous step's reply."""
    claude = get_harness("claude-code")
    write_agent_log(ctx, json.dumps(claude_result("step one's reply")) + "\n")
    step_two = HarnessContext(instruction="Step two.", task_dir=ctx.task_dir, workspace=ctx.workspace,
                              logs_dir=ctx.logs_dir, home=tmp_path / "home2")
    step_two.workspace.mkdir(exist_ok=True)
    get_harness("noop").plan(step_two)  # Harness.plan notes where this step's output starts
    assert step_two.agent_log_start == (ctx.logs_dir / AGENT_LOG_FILE).stat().st_size
    with (ctx.logs_dir / AGENT_LOG_FILE).open("a") as fh:
        fh.write("Error: step two crashed\n")
    assert claude.final_reply(step_two) is None
    assert claude.final_reply(ctx) == "step one's reply"
    with (ctx.logs_dir / AGENT_LOG_FILE).open("a") as fh:
        fh.write(json.dumps(claude_result("step two's reply")) + "\n")
    assert claude.final_reply(step_two) == "step two's reply"
