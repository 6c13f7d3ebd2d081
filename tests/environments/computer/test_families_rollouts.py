"""Every computer-use family end to end on the local backend (bubblewrap where installed):
the oracle (solution/actions.json replayed by the computer-use harness on a real Xvfb
desktop) scores 1.0, the no-op agent 0.0, and the oracle's screenshots are PNGs in the
rollout's logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.computer.desktop import missing_binaries
from environments.computer.families import FAMILIES, generate
from environments.gui.observation import png_size
from environments.records import Outcome, RolloutSpec
from training.orchestrator.local import LocalBackend
from training.orchestrator.scheduler import Scheduler, new_rollout_id

from .conftest import needs_desktop

pytestmark = [needs_desktop(), pytest.mark.slow]


def _spec(task: Path, harness: str) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=240)


@pytest.mark.parametrize("family", sorted(FAMILIES))
async def test_oracle_scores_one_noop_zero_with_screenshots(family: str, family_task, openforge_home: Path) -> None:
    missing = missing_binaries(tuple(sorted({app["argv"][0] for app in generate(family, 3).apps})))
    if missing:
        pytest.skip(f"{family}: app(s) {', '.join(missing)} not installed (scripts/install.sh --dev installs them)")
    task = family_task(family)
    backend = LocalBackend()
    try:
        sched = Scheduler(backend, concurrency=2)
        results = {r.harness: r async for r in sched.run([_spec(task, "oracle"), _spec(task, "noop")])}
        oracle, noop = results["oracle"], results["noop"]
        assert oracle.status == Outcome.ok and oracle.reward == 1.0, oracle
        assert noop.status == Outcome.ok and noop.reward == 0.0, noop
        shots = sorted((openforge_home / "rollouts" / oracle.rollout_id / "logs" / "agent" / "screenshots").glob("*.png"))
        assert len(shots) >= 3
        assert shots[0].name == "step_000.png"
        assert all(png_size(p.read_bytes()) == (1920, 1080) for p in shots)
        assert await backend.live_sandboxes() == []
    finally:
        await backend.aclose()
