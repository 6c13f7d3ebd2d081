"""The procedural browser families: valid, deterministic task dirs; and end to end on the
local backend (bubblewrap where available) — the oracle, replayed through the harness's
action executor, scores 1.0 and the no-op agent 0.0, for every family."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from environments.browser.families import FAMILIES, generate
from environments.records import Outcome, RolloutSpec
from environments.taskdir import content_sha, load_task, validate_task
from tests.environments.browser.conftest import needs_chromium, write_family_task
from training.orchestrator.local import LocalBackend
from training.orchestrator.scheduler import Scheduler, new_rollout_id

FAMILY_NAMES = sorted(FAMILIES)


def test_there_are_at_least_five_families_over_all_four_sites() -> None:
    from environments.browser.families import FAMILY_SITES

    assert len(FAMILIES) >= 5
    assert {s for sites in FAMILY_SITES.values() for s in sites} == {"shop", "travel", "forum", "docs"}


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_family_writes_a_valid_deterministic_task(family: str, difficulty: str, tmp_path: Path) -> None:
    a, task = write_family_task(tmp_path / "a", family, 7, difficulty)
    b, _ = write_family_task(tmp_path / "b", family, 7, difficulty)
    assert validate_task(a) == [] and content_sha(a) == content_sha(b)
    cfg = load_task(a).config
    assert cfg.openforge.domain == "browser-use" and cfg.openforge.services == task.sites
    assert os.access(a / "tests" / "test.sh", os.X_OK) and os.access(a / "solution" / "solve.sh", os.X_OK)
    steps = json.loads((a / "solution" / "actions.json").read_text())
    # the oracle speaks the Table A3 action space only (targets become coordinates at replay)
    assert {s["action"] for s in steps} <= {"click", "type", "key", "goto", "scroll", "answer", "terminate"}
    assert steps[-1]["action"] in ("terminate", "answer")
    assert json.loads((a / "environment" / "browser.json").read_text())["start_url"].endswith(".test/")
    for site in task.sites:
        assert (a / "environment" / "fixtures" / f"{site}.json").is_file()


def test_seeds_vary_the_task() -> None:
    for family in FAMILY_NAMES:
        instructions = {generate(family, seed, "medium").instruction for seed in range(6)}
        assert len(instructions) >= 4, family


def test_verifier_scores_zero_when_sites_are_down(tmp_path: Path) -> None:
    import subprocess
    import sys

    task, _ = write_family_task(tmp_path, "shop-purchase", 1)
    logs = tmp_path / "logs"
    env = {**os.environ, "CLAW_URL": "http://127.0.0.1:9", "LOGS_DIR": str(logs),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(["bash", str(task / "tests" / "test.sh")], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    flat = json.loads((logs / "verifier" / "reward.json").read_text())
    doc = json.loads((logs / "verifier" / "checks.json").read_text())
    assert flat["reward"] == 0.0 and all(isinstance(v, (int, float)) for v in flat.values())
    assert doc["reward"] == 0.0 and "URLError" in doc["error"]


@pytest.mark.slow
@needs_chromium
async def test_oracle_scores_one_and_noop_zero_for_every_family(tmp_path: Path, openforge_home: Path) -> None:
    tasks = {f: write_family_task(tmp_path / "bank", f, seed=3, difficulty="medium")[0] for f in FAMILY_NAMES}
    backend = LocalBackend()
    specs = [RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(t), task_id=f, harness=h, timeout_sec=240)
             for f, t in tasks.items() for h in ("oracle", "noop")]
    try:
        results = [r async for r in Scheduler(backend, concurrency=2).run(specs)]
    finally:
        await backend.aclose()
    by = {(r.task_id, r.harness): r for r in results}
    assert len(by) == 2 * len(FAMILY_NAMES)
    for family in FAMILY_NAMES:
        oracle, noop = by[(family, "oracle")], by[(family, "noop")]
        assert oracle.status == Outcome.ok and oracle.reward == 1.0, (family, oracle)
        assert noop.status == Outcome.ok and noop.reward == 0.0, (family, noop)
        replay = openforge_home / "rollouts" / oracle.rollout_id / "logs" / "agent" / "oracle-replay.json"
        clicks = [s for s in json.loads(replay.read_text()) if s["action"]["action"] == "click"]
        assert clicks and all(s["ok"] and "x" in s["action"] for s in clicks)  # coordinates, via the executor
