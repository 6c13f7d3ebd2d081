"""The browser-use harness end to end: a scripted OpenAI-compatible model (the fake vLLM
server, an external-boundary fake) drives Chromium through the proxy on the local backend.
Each call carries a screenshot image part and the text block; malformed replies and failed
actions are fed back and counted; screenshots land as PNGs in the rollout's logs; the
answer reaches the verifier; every call is recorded with its image by reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from environments.gui.observation import PNG_SIGNATURE
from environments.harnesses import HarnessContext, get_harness
from tests.environments.browser.conftest import needs_chromium, write_family_task


def test_adapter_plan_passes_sites_start_url_and_options(tmp_path: Path) -> None:
    task, bt = write_family_task(tmp_path, "docs-lookup", 1)
    ctx = HarnessContext(instruction=bt.instruction, task_dir=task, workspace=tmp_path, logs_dir=tmp_path / "logs",
                         home=tmp_path / "home", base_url="http://127.0.0.1:9/rollouts/t/v1", token="tok",
                         services_url="http://127.0.0.1:4321", options={"max_steps": 5, "cdp_url": "http://10.0.0.2:9222"})
    plan = get_harness("browser-use").plan(ctx)
    argv = plan.argv
    assert argv[1:3] == ["-m", "environments.harnesses.browser_use"]
    assert argv[argv.index("--max-steps") + 1] == "5" and argv[argv.index("--start-url") + 1] == "http://docs.test/"
    assert argv[argv.index("--sites-url") + 1] == "http://127.0.0.1:4321"
    assert argv[argv.index("--cdp-url") + 1] == "http://10.0.0.2:9222"
    assert plan.env["OPENAI_API_KEY"] == "tok"
    assert (tmp_path / "home" / "browser-use" / "instruction.md").read_text() == bt.instruction


@pytest.mark.slow
@needs_chromium
async def test_scripted_model_solves_a_docs_task_through_the_proxy(tmp_path: Path, openforge_home: Path,
                                                                   sqlite_url: str) -> None:
    from storage.db import make_engine
    from storage.models import ModelCall
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from training.orchestrator.single import rollout_once

    task, bt = write_family_task(tmp_path / "bank", "docs-lookup", 4, "easy")
    slug = next(s["target"] for s in bt.actions if "data-page" in s.get("target", "")).split("'")[1]
    value = bt.actions[-1]["text"]
    async with FakeVLLM() as fake:
        fake.script(
            FakeReply.text(f'I will open the page.\n{{"action": "goto", "url": "http://docs.test/page/{slug}"}}'),
            FakeReply.text("hmm, let me look around"),                       # malformed: no JSON action
            FakeReply.text('{"action": "click", "x": 5000, "y": 10}'),       # fails: outside the viewport
            FakeReply.text(json.dumps({"action": "answer", "text": value})),
        )
        doc = await rollout_once(str(task), "browser-use", engine=fake.base_url, timeout=240, db_url=sqlite_url,
                                 harness_options={"max_steps": 6})
        requests = list(fake.requests)
    assert doc["status"] == "ok" and doc["reward"] == 1.0, doc
    assert doc["n_calls"] == 4 and len(requests) == 4

    first = requests[0]["messages"]
    assert first[0]["role"] == "system" and '"action": "click"' in first[0]["content"]
    parts = first[-1]["content"]
    text = next(p["text"] for p in parts if p["type"] == "text")
    assert "Step 1 of 6" in text and "URL: http://docs.test/" in text and "Page title: Home" in text
    image = next(p for p in parts if p["type"] == "image_url")
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    later = next(p["text"] for p in requests[1]["messages"][-1]["content"] if p["type"] == "text")
    assert f"goto(url='http://docs.test/page/{slug}') → opened http://docs.test/page/{slug} (HTTP 200)" in later
    third = next(p["text"] for p in requests[2]["messages"][-1]["content"] if p["type"] == "text")
    assert "not a valid action: no JSON object found" in third
    fourth = next(p["text"] for p in requests[3]["messages"][-1]["content"] if p["type"] == "text")
    assert "outside the 1280×720 viewport" in fourth
    # only the newest screenshot travels; older ones become a placeholder
    assert sum(1 for m in requests[3]["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p["type"] == "image_url") == 1

    agent = openforge_home / "rollouts" / doc["rollout_id"] / "logs" / "agent"
    shots = sorted((agent / "screenshots").glob("*.png"))
    assert len(shots) == 4 and all(s.read_bytes().startswith(PNG_SIGNATURE) for s in shots)
    assert (agent / "answer.txt").read_text() == value
    traj = json.loads((agent / "trajectory.json").read_text())
    assert [s["kind"] for s in traj["steps"]] == ["action", "malformed", "action", "action"]
    assert traj["result"]["status"] == "answered" and traj["result"]["malformed"] == 1
    assert traj["result"]["failed_actions"] == 1

    db = make_engine(sqlite_url)
    try:
        from sqlalchemy.orm import Session

        with Session(db) as s:
            calls = s.execute(select(ModelCall).where(ModelCall.rollout_id == doc["rollout_id"])
                              .order_by(ModelCall.index)).scalars().all()
            stored = [c.request for c in calls]
    finally:
        db.dispose()
    assert len(stored) == 4
    dumped = json.dumps(stored)
    assert "base64," not in dumped  # images recorded by reference (content hash), not inline
    assert dumped.count('"image_ref"') >= 4
