"""The real Codex CLI (Responses API) and Claude Code (Messages API) complete an exchange
through the proxy against the fake engine, and the exchange is recorded. Slow: real binaries."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from environments.harnesses.binaries import find_binary
from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.proxy.client import ProxyAdminClient, Registration

pytestmark = pytest.mark.slow


def _binary(name: str) -> Path:
    path = find_binary(name)
    if path is None:
        reason = f"{name} binary not found (run scripts/install-harnesses.sh or set OPENFORGE_TOOLS_DIR)"
        print(reason)
        pytest.skip(reason)
    return path


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEX_", "CLAUDE_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local/share"), TMPDIR=str(home / "tmp"))
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return env


async def _run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(subprocess.run, cmd, env=env, cwd=cwd, capture_output=True, text=True,
                                   timeout=timeout, stdin=subprocess.DEVNULL)


async def test_codex_cli_exchange_is_recorded(fake_vllm: FakeVLLM, admin: ProxyAdminClient, tmp_path: Path) -> None:
    codex = _binary("codex")
    reg: Registration = await admin.register(task_id="codex-smoke", harness="codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "policy"\nmodel_provider = "openforge"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n\n'
        '[model_providers.openforge]\nname = "OpenForge proxy"\n'
        f'base_url = "{reg.base_url}"\nenv_key = "OPENFORGE_KEY"\nwire_api = "responses"\n')
    work = tmp_path / "work"
    work.mkdir()
    env = _clean_env(tmp_path / "home") | {"CODEX_HOME": str(codex_home), "OPENFORGE_KEY": "unused"}
    # One tool round trip: the policy runs a command through Codex's exec_command, then answers.
    fake_vllm.script(FakeReply.tool("exec_command", {"cmd": "echo MARKER-42 > out.txt"}),
                     FakeReply.text("HELLO-FROM-THE-POLICY"))
    proc = await _run([str(codex), "exec", "--skip-git-repo-check", "Write the marker file."], env, work)
    assert proc.returncode == 0, f"codex failed:\nstdout={proc.stdout[-3000:]}\nstderr={proc.stderr[-3000:]}"
    assert "HELLO-FROM-THE-POLICY" in proc.stdout + proc.stderr
    assert (work / "out.txt").read_text().strip() == "MARKER-42"
    calls = await admin.calls(reg.rollout_id)
    responses = [c for c in calls if c["api"] == "responses" and c["status"] == "ok"]
    assert len(responses) == 2, calls
    for c in responses:
        assert c["prompt_token_ids"] and c["response_token_ids"] and c["response_logprobs"]
        assert c["request"]["_client_request"]["stream"] is True
    assert any("Write the marker file." in str(m.get("content")) for m in responses[0]["request"]["messages"])
    assert responses[0]["finish_reason"] == "tool_calls"
    assert [m["role"] for m in responses[1]["request"]["messages"]][-2:] == ["assistant", "tool"]


async def test_claude_code_exchange_is_recorded(fake_vllm: FakeVLLM, admin: ProxyAdminClient, tmp_path: Path) -> None:
    claude = _binary("claude")
    reg: Registration = await admin.register(task_id="claude-smoke", harness="claude")
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    env = _clean_env(home) | {
        "ANTHROPIC_BASE_URL": reg.anthropic_base_url, "ANTHROPIC_API_KEY": "unused",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
    }

    def policy(body: dict) -> FakeReply:
        """Bash once, then answer; side requests (titles, checks) without the Bash tool get text."""
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        if body["messages"][-1]["role"] == "tool" or "Bash" not in tools:
            return FakeReply.text("HELLO-FROM-THE-POLICY")
        return FakeReply.tool("Bash", {"command": "echo MARKER-43 > out.txt", "description": "write marker"})

    fake_vllm.responder = policy
    proc = await _run([str(claude), "-p", "Write the marker file.", "--model", "policy", "--allowedTools", "Bash"],
                      env, work)
    assert proc.returncode == 0, f"claude failed:\nstdout={proc.stdout[-3000:]}\nstderr={proc.stderr[-3000:]}"
    assert "HELLO-FROM-THE-POLICY" in proc.stdout
    assert (work / "out.txt").read_text().strip() == "MARKER-43"
    calls = await admin.calls(reg.rollout_id)
    main = [c for c in calls if c["api"] == "messages" and c["status"] == "ok"
            and any(t["function"]["name"] == "Bash" for t in c["request"].get("tools") or [])]
    assert len(main) == 2, [c["request"]["messages"][-1] for c in calls]
    for c in main:
        assert c["prompt_token_ids"] and c["response_token_ids"] and c["response_logprobs"]
    assert main[0]["finish_reason"] == "tool_calls"
    assert main[1]["request"]["messages"][-1]["role"] == "tool"
