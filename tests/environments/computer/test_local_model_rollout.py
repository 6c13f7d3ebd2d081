"""A computer-use rollout with the local text engine (a tiny random Llama; no vision model is
available offline) through the recording proxy, on the local backend: the harness sends
screenshots as image parts, the proxy hides them from the text-only engine (placeholder),
records every call with the images by content-hash reference (no base64 in the DB), and the
rollout completes with a verifier reward."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.gui.observation import png_size
from environments.records import Outcome, RolloutSpec
from training.orchestrator.local import LocalBackend
from training.orchestrator.scheduler import Scheduler, new_rollout_id
from training.proxy.server import ProxyServer

from .conftest import needs_desktop

pytestmark = [needs_desktop(), pytest.mark.slow]


@pytest.fixture
def tiny_engine(tmp_path: Path):
    pytest.importorskip("transformers")
    from testkit.models import build_tiny_model, build_tiny_tokenizer
    from training.engines.local import LocalEngine

    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(len(tokenizer), max_len=65536)
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    return LocalEngine(str(tmp_path / "tiny"), max_batch_size=2, seed=0)


async def test_local_text_model_rollout_records_images_by_reference(
        tiny_engine, family_task, db_engine, sqlite_url: str, openforge_home: Path) -> None:
    task = family_task("document-write")
    blobs = openforge_home / "blobs"
    backend = LocalBackend()
    try:
        async with ProxyServer(tiny_engine, db_url=sqlite_url, blobs_dir=blobs) as server, server.client() as admin:
            sched = Scheduler(backend, proxy=admin, db=db_engine)
            spec = RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness="computer-use", timeout_sec=300,
                               model="policy", harness_options={"max_steps": 2, "max_tokens": 12, "history_images": 1})
            result = await sched.run_one(spec)
            calls = await admin.calls(result.rollout_id)
    finally:
        await backend.aclose()
        await tiny_engine.aclose()
    assert result.status == Outcome.ok and result.reward == 0.0, result  # random weights do not write the memo
    assert 1 <= len(calls) <= 2 and all(c["status"] == "ok" for c in calls)
    for c in calls:
        text = json.dumps(c["request"])
        assert "base64" not in text
        refs = [p for m in c["request"]["messages"] if isinstance(m.get("content"), list)
                for p in m["content"] if p.get("type") == "image_ref"]
        assert len(refs) == 1  # history_images=1: only the latest screenshot is sent
        png = (blobs / refs[0]["path"]).read_bytes()
        assert png_size(png) == (1920, 1080)
        assert c["prompt_token_ids"] and c["response_token_ids"]
        assert {"computer", "bash", "str_replace_editor"} <= {t["function"]["name"] for t in c["request"]["tools"]}
    shots = sorted((openforge_home / "rollouts" / result.rollout_id / "logs" / "agent" / "screenshots").glob("*.png"))
    assert shots and shots[0].name == "step_000.png"
