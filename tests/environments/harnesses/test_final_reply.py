"""The post-run final-reply step: a third-party harness declares where its final reply lands
(mini-swe-agent: its trajectory's submission; Codex: its ``-o`` last-message file) and the
runner copies it to ``<logs>/agent/final_answer.txt`` without following planted symlinks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.harnesses import HarnessContext, get_harness
from environments.harnesses.adapters.mini_swe_agent import submitted_reply
from environments.harnesses.base import FINAL_ANSWER_FILE, deliver_final_reply


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
