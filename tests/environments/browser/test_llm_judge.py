"""The LLM-judge verifier against a scripted OpenAI-compatible server (the fake vLLM server,
an external-boundary fake): the prompt carries the evidence, the score becomes a reward by
the configured threshold, junk replies and dead endpoints are errors (reward 0), and the CLI
writes reward.txt / reward.json like any verifier."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from environments.verifiers.llm_judge import (
    Evidence,
    JudgeConfig,
    JudgeError,
    judge,
    parse_verdict,
    render_prompt,
)
from testkit.fakes.vllm import FakeReply, FakeVLLM

EVIDENCE = Evidence(instruction="Find the opening hours of the Lisbon office.", answer="9:00-17:30 on weekdays",
                    final_url="https://example.test/contact", final_title="Contact us",
                    trajectory="1. goto https://example.test/\n2. click Contact")


@pytest.mark.parametrize(("reply", "score"), [
    ('{"score": 0.9, "rationale": "matches"}', 0.9),
    ('Verdict:\n```json\n{"score": 8, "rationale": "mostly"}\n```', 0.8),
    ('{"score": "75", "reason": "ok"}', 0.75),
    ("score: 3/10 — the answer is vague", 0.3),
    ('{"score": 1.7}', 0.17),
])
def test_verdicts_parse_and_rescale(reply: str, score: float) -> None:
    assert parse_verdict(reply)[0] == pytest.approx(score)


def test_a_reply_without_a_score_is_an_error() -> None:
    with pytest.raises(JudgeError, match="no score"):
        parse_verdict("I think the agent did fine.")


def test_template_is_configurable_and_checked() -> None:
    assert render_prompt("Q: {instruction} A: {answer}", Evidence("x?", "")) == "Q: x? A: (none)"
    with pytest.raises(JudgeError, match="unknown field 'screenshot'"):
        render_prompt("{screenshot}", EVIDENCE)


async def test_judge_passes_and_fails_by_threshold() -> None:
    async with FakeVLLM(model="judge") as fake:
        fake.script(FakeReply.text('{"score": 0.8, "rationale": "The hours are stated."}'),
                    FakeReply.text('{"score": 0.8, "rationale": "The hours are stated."}'),
                    FakeReply.text('{"score": 0.8, "rationale": "The hours are stated."}'))
        passed = await judge(EVIDENCE, JudgeConfig(base_url=fake.base_url, model="judge", api_key="k"))
        strict = await judge(EVIDENCE, JudgeConfig(base_url=fake.base_url, threshold=0.9))
        graded = await judge(EVIDENCE, JudgeConfig(base_url=fake.base_url, binary=False))
        body = fake.requests[0]
    assert (passed.reward, passed.passed, passed.rationale) == (1.0, True, "The hours are stated.")
    assert (strict.reward, strict.passed) == (0.0, False)
    assert graded.reward == pytest.approx(0.8)
    prompt = body["messages"][0]["content"]
    assert body["model"] == "judge" and body["temperature"] == 0.0
    for part in ("opening hours of the Lisbon office", "9:00-17:30", "https://example.test/contact", "2. click Contact"):
        assert part in prompt


async def test_judge_errors_on_junk_and_on_a_dead_endpoint() -> None:
    async with FakeVLLM(model="judge") as fake:
        fake.script(FakeReply.text("looks good to me"))
        with pytest.raises(JudgeError, match="no score"):
            await judge(EVIDENCE, JudgeConfig(base_url=fake.base_url))
        fake.script(FakeReply.failure(500), FakeReply.failure(500))
        with pytest.raises(JudgeError, match="HTTP 500"):
            await judge(EVIDENCE, JudgeConfig(base_url=fake.base_url, retries=1))
    with pytest.raises(JudgeError, match="unreachable"):
        await judge(EVIDENCE, JudgeConfig(base_url="http://127.0.0.1:9/v1", retries=0, timeout=5))


def test_cli_writes_the_reward_files(tmp_path: Path) -> None:
    (tmp_path / "instruction.md").write_text(EVIDENCE.instruction)
    (tmp_path / "answer.txt").write_text(EVIDENCE.answer)
    traj = {"steps": [{"step": 1, "kind": "action", "url": "https://example.test/contact", "title": "Contact us",
                       "action": {"action": "answer", "text": "9:00"}, "result": "answer recorded"}]}
    (tmp_path / "trajectory.json").write_text(json.dumps(traj))
    with FakeVLLM(model="judge") as fake:
        fake.script(FakeReply.text('{"score": 1, "rationale": "correct"}'))
        out = subprocess.run(
            [sys.executable, "-m", "environments.verifiers.llm_judge", "--instruction-file", str(tmp_path / "instruction.md"),
             "--answer-file", str(tmp_path / "answer.txt"), "--trajectory-file", str(tmp_path / "trajectory.json"),
             "--out-dir", str(tmp_path / "verifier"), "--base-url", fake.base_url],
            capture_output=True, text=True, timeout=60, check=False, cwd=Path(__file__).resolve().parents[3])
        prompt = fake.requests[0]["messages"][0]["content"]
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "verifier" / "reward.txt").read_text().strip() == "1.0"
    flat = json.loads((tmp_path / "verifier" / "reward.json").read_text())
    assert flat == {"reward": 1.0, "check.judge_passed": 1, "judge.score": 1.0}
    doc = json.loads((tmp_path / "verifier" / "checks.json").read_text())
    assert doc["checks"] == {"judge_passed": True} and doc["judge"]["rationale"] == "correct"
    assert "Contact us <https://example.test/contact>" in prompt and '"action": "answer"' in prompt


def test_cli_without_an_endpoint_scores_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENFORGE_JUDGE_URL", raising=False)
    (tmp_path / "instruction.md").write_text("x")
    from environments.verifiers.llm_judge import main

    assert main(["--instruction-file", str(tmp_path / "instruction.md"), "--out-dir", str(tmp_path / "v")]) == 0
    assert json.loads((tmp_path / "v" / "reward.json").read_text()) == {"reward": 0.0, "check.judge_passed": 0}
    doc = json.loads((tmp_path / "v" / "checks.json").read_text())
    assert doc["reward"] == 0.0 and "OPENFORGE_JUDGE_URL" in doc["error"]
