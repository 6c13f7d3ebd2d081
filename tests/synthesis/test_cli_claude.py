"""``openforge synthesize --backend claude`` on a fresh Prefect home: ``openforge init`` creates
the paid-API limits the claude backend acquires strictly, and the command (a flow run of the
``synthesize`` flow) drives the REAL Claude Code binary against the scripted Anthropic server
(the only fake: a paid API) through all five stages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environments.harnesses.binaries import find_binary
from tests.synthesis.fake_anthropic import FakeAnthropic
from tests.synthesis.scripted_author import ScriptedAuthor
from tests.synthesis.test_claude_backend import decider

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.skipif(find_binary("claude") is None, reason="claude binary missing")]


@pytest.mark.timeout(1200)
def test_claude_synthesis_command_succeeds_on_a_fresh_prefect_home(tmp_path: Path) -> None:
    home, prefect_home, state = tmp_path / "home", tmp_path / "prefect", tmp_path / "claude-state"
    state.mkdir()
    with FakeAnthropic(decider(ScriptedAuthor())) as fake:
        env = {**os.environ, "OPENFORGE_HOME": str(home), "PREFECT_HOME": str(prefect_home), "PYTHONPATH": str(REPO),
               "PREFECT_API_URL": "", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-fake", "HOME": str(state),
               "CLAUDE_CONFIG_DIR": str(state / ".claude"), "XDG_CONFIG_HOME": str(state / ".config"),
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        env.pop("PREFECT_API_URL")
        init = subprocess.run([sys.executable, "-m", "cli", "init"], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)
        assert init.returncode == 0, init.stdout[-2000:] + init.stderr[-2000:]
        out = subprocess.run([sys.executable, "-m", "cli", "synthesize", "--backend", "claude", "--n", "1",
                              "--workers", "1", "--json"], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=1000)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert fake.requests, "Claude Code called the scripted Anthropic server"
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["status"] == "done" and report["tasks"].get("verified", 0) >= 1, report
    assert report["cost_usd"] > 0
