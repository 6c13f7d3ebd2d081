"""The computer-use harness loop against a scripted model (the fake vLLM engine behind the
real proxy) on a real Xvfb desktop: the model's tool calls drive Mousepad (click, type,
ctrl+s), bash and str_replace_editor; bad calls come back as observations; every step's
screenshot is a PNG in the logs and reaches the engine as an image part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.computer.spec import AppSpec, DesktopSpec
from environments.gui.observation import png_size
from environments.harnesses.computer_use.loop import CUConfig, run_episode
from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.server import ProxyServer

from .conftest import needs_desktop

pytestmark = [needs_desktop(), pytest.mark.slow]


async def test_scripted_model_drives_the_desktop(tmp_path: Path, sqlite_url: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    with FakeVLLM() as fake:
        fake.script(
            FakeReply.tool("computer", {"action": "left_click", "coordinate": [0.5, 0.5]}),
            FakeReply.tool("computer", {"action": "type", "text": "typed by the model\nline two"}),
            FakeReply.tool("computer", {"action": "key", "text": "ctrl+s"}),
            FakeReply.tool("computer", {"action": "left_click", "coordinate": [3, 3]}),  # out of range
            FakeReply.tool("computer", '{"action": "key", "text": '),  # malformed JSON
            FakeReply.tool("str_replace_editor", {"command": "str_replace", "path": "a.txt", "old_str": "alpha",
                                                  "new_str": "beta"}),
            FakeReply.tool("bash", {"command": "echo $DISPLAY > display.txt; xdotool getactivewindow getwindowname"}),
            FakeReply.tool("computer", {"action": "terminate", "status": "success"}),
        )
        engine = OpenAICompatEngine(fake.base_url, timeout=10.0)
        async with ProxyServer(engine, db_url=sqlite_url, blobs_dir=tmp_path / "blobs") as server, \
                server.client() as admin:
            reg = await admin.register(task_id="t", harness="computer-use")
            cfg = CUConfig(instruction="Write two lines in memo.txt and save it.", workspace=ws,
                           log_dir=tmp_path / "logs", home=tmp_path / "home", model="fake-policy",
                           base_url=reg.base_url, api_key="x", history_images=2, settle=0.2,
                           desktop=DesktopSpec(width=1280, height=720,
                                               apps=[AppSpec(argv=["mousepad", "memo.txt"], window="mousepad")]))
            result = await run_episode(cfg)
            calls = await admin.calls(reg.rollout_id)
        requests = list(fake.requests)
    assert result.status == "finished" and result.terminal == "success", result
    assert result.n_calls == 8 and result.steps == 8 and result.malformed == 2
    assert (ws / "memo.txt").read_text().rstrip("\n") == "typed by the model\nline two"
    assert (ws / "a.txt").read_text() == "beta\n"
    assert (ws / "display.txt").read_text().startswith(":")
    shots = sorted((tmp_path / "logs" / "screenshots").glob("step_*.png"))
    assert len(shots) == 8 and all(png_size(p.read_bytes()) == (1280, 720) for p in shots)
    traj = json.loads((tmp_path / "logs" / "trajectory.json").read_text())
    observations = [s["observation"] for s in traj["steps"]]
    assert "normalized to [0, 1]" in observations[3] and "not a valid JSON object" in observations[4]
    assert "memo.txt" in observations[6]  # the active window is Mousepad's memo
    assert "base64" not in json.dumps(traj)
    # the engine saw at most history_images screenshots per call, as image_url parts
    for body in requests:
        parts = [p for m in body["messages"] if isinstance(m.get("content"), list) for p in m["content"]]
        assert 1 <= sum(p.get("type") == "image_url" for p in parts) <= 2
        assert {t["function"]["name"] for t in body["tools"]} == {"computer", "bash", "str_replace_editor"}
    assert len(calls) == 8 and all("base64" not in json.dumps(c["request"]) for c in calls)
    assert len(list((tmp_path / "blobs").rglob("*.png"))) >= 2


async def test_desktop_failure_is_an_infra_error(tmp_path: Path) -> None:
    cfg = CUConfig(instruction="x", workspace=tmp_path, log_dir=tmp_path / "logs", home=tmp_path / "home",
                   replay=[], desktop=DesktopSpec(apps=[AppSpec(argv=["no-such-app-openforge"])]))
    result = await run_episode(cfg)
    assert result.status == "infra_error" and result.error_kind == "start_failed"
    assert "no-such-app-openforge" in (result.error or "")


async def test_an_app_whose_window_never_shows_is_started_again(tmp_path: Path) -> None:
    # First start: the app hangs without a window (as PCManFM now and then does); the harness
    # kills it after a third of app_timeout and starts it again, which opens the window.
    ws = tmp_path / "ws"
    ws.mkdir()
    app = ws / "app.sh"
    app.write_text(f"#!/bin/sh\nif [ ! -e {ws}/started ]; then touch {ws}/started; exec sleep 300; fi\n"
                   f"echo $$ > {ws}/second; exec mousepad {ws}/memo.txt\n")
    app.chmod(0o755)
    cfg = CUConfig(instruction="x", workspace=ws, log_dir=tmp_path / "logs", home=tmp_path / "home", app_timeout=9,
                   replay=[{"tool": "computer", "args": {"action": "terminate", "status": "success"}}],
                   desktop=DesktopSpec(width=1024, height=768, apps=[AppSpec(argv=[str(app)], window="mousepad")]))
    result = await run_episode(cfg)
    assert result.status == "finished", result
    assert (ws / "second").is_file()


async def test_an_app_window_that_never_shows_is_a_start_failure(tmp_path: Path) -> None:
    cfg = CUConfig(instruction="x", workspace=tmp_path, log_dir=tmp_path / "logs", home=tmp_path / "home",
                   app_timeout=3, replay=[],
                   desktop=DesktopSpec(apps=[AppSpec(argv=["sleep", "300"], window="never-a-window")]))
    result = await run_episode(cfg)
    assert result.status == "infra_error" and result.error_kind == "start_failed", result
    assert "never-a-window" in (result.error or "")
