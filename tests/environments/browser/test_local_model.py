"""A browser-use rollout with the local text engine (a tiny random Llama from the engine
tests' builders) through the recording proxy: it completes, every call is recorded with
token ids and logprobs, and the screenshots are recorded by reference. A vision model is not
available offline: the text engine sees a placeholder where the image was (the proxy's
doing), so this checks the plumbing, not that a model can browse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.environments.browser.conftest import needs_chromium, write_family_task


@pytest.fixture(scope="module")
def tiny_long_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The engine tests' tiny Llama, with a context long enough for a screenshot-step prompt."""
    from testkit.models import build_tiny_model, build_tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama-long")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(len(tokenizer), max_len=8192).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
@needs_chromium
async def test_local_text_model_rollout_completes_and_is_recorded(tmp_path: Path, openforge_home: Path,
                                                                  sqlite_url: str, tiny_long_model: Path) -> None:
    from storage.db import make_engine
    from storage.models import ModelCall
    from training.orchestrator.single import rollout_once

    task, _ = write_family_task(tmp_path / "bank", "shop-compare-answer", 2, "easy")
    doc = await rollout_once(str(task), "browser-use", engine=f"local:{tiny_long_model}", timeout=300, db_url=sqlite_url,
                             harness_options={"max_steps": 2, "max_tokens": 12, "temperature": 1.0})
    assert doc["status"] == "ok", doc  # the random model cannot solve it: reward 0 from the verifier
    assert doc["reward"] == 0.0 and doc["n_calls"] == 2

    agent = openforge_home / "rollouts" / doc["rollout_id"] / "logs" / "agent"
    traj = json.loads((agent / "trajectory.json").read_text())
    assert traj["result"]["status"] == "step_limit" and traj["result"]["n_calls"] == 2
    assert len(list((agent / "screenshots").glob("*.png"))) == 2

    db = make_engine(sqlite_url)
    try:
        with Session(db) as s:
            calls = s.execute(select(ModelCall).where(ModelCall.rollout_id == doc["rollout_id"])
                              .order_by(ModelCall.index)).scalars().all()
            rows = [(c.request, c.prompt_token_ids, c.response_token_ids, c.response_logprobs) for c in calls]
    finally:
        db.dispose()
    assert len(rows) == 2
    for request, prompt_ids, response_ids, logprobs in rows:
        assert prompt_ids and response_ids and len(logprobs) == len(response_ids)
        dumped = json.dumps(request)
        assert '"image_ref"' in dumped and "base64," not in dumped
