"""How many cores the in-process engine decodes on: half beside other work, every core in a
synchronous RL run (the engine and its trainer take turns), ``engine.threads`` when set."""

from __future__ import annotations

from pathlib import Path

import pytest

from openforge.presets import Preset, load_preset


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import training.engines.local.engine as local_engine_module
    from training import cpu

    monkeypatch.setattr(cpu, "available_cores", lambda: 4)
    monkeypatch.setattr(local_engine_module, "available_cores", lambda: 4)


def _preset(tiny_policy_dir: Path, **overrides: object) -> Preset:
    return load_preset("local", {"engine.model_path": str(tiny_policy_dir), "engine.context_length": None,
                                 **overrides})


@pytest.mark.parametrize(("alternates", "overrides", "threads"), [
    (False, {}, 2),                        # an evaluation's engine, beside harnesses and other work
    (True, {}, 4),                         # a synchronous RL run's engine
    (True, {"engine.threads": 1}, 1),      # the preset's own count wins
    (False, {"engine.threads": 3}, 3),
], ids=["beside-other-work", "alternates-with-trainer", "preset-pins-1", "preset-pins-3"])
async def test_local_engine_threads(tiny_policy_dir: Path, four_cores: None, alternates: bool,
                                    overrides: dict[str, object], threads: int) -> None:
    from training.workflows.common import local_engine

    engine = local_engine(_preset(tiny_policy_dir, **overrides), None, alternates_with_trainer=alternates)
    try:
        assert engine._batcher.threads == threads
    finally:
        await engine.aclose()


@pytest.mark.parametrize(("async_rollouts", "threads"), [(False, 4), (True, 2)], ids=["sync", "async"])
async def test_an_rl_run_engine_takes_every_core_only_when_its_steps_are_synchronous(
        tiny_policy_dir: Path, tmp_path: Path, four_cores: None, async_rollouts: bool, threads: int) -> None:
    """Synchronous steps leave the engine idle while the trainer steps (and the trainer holds
    no cores while the engine decodes); asynchronous ones run both at once, so the engine keeps half."""
    from openforge.settings import get_settings
    from storage.db import make_engine
    from storage.migrate import upgrade
    from training.workflows.rl import _policy

    preset = _preset(tiny_policy_dir, **{"train.async_rollouts": async_rollouts})
    db = make_engine(get_settings().db_url)
    upgrade(get_settings().db_url, db)
    engine, _, _ = await _policy(preset, "local", None, tmp_path / "run", db, "run")
    try:
        assert engine._batcher.threads == threads
    finally:
        await engine.aclose()
        db.dispose()
