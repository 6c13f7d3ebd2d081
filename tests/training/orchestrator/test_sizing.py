"""A run's sandbox size (preset rollout.cpus / memory_mb) replaces the task's, on every backend."""

from __future__ import annotations

from pathlib import Path

from environments.records import RolloutSpec
from environments.taskdir import load_task
from training.orchestrator.layout import load_and_lay_out, sized_for

EXAMPLE = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples" / "claw-gmail-invoice-reply"


def _spec(**kw) -> RolloutSpec:  # noqa: ANN003
    return RolloutSpec(rollout_id="r1", task_dir=str(EXAMPLE), harness="noop", **kw)


def test_sized_for_overrides_only_what_the_run_sets(tmp_path: Path) -> None:
    task = load_task(EXAMPLE)
    own = task.config.environment
    assert sized_for(task, _spec()) is task
    sized = sized_for(task, _spec(cpus=2.0, memory_mb=6144))
    assert (sized.config.environment.cpus, sized.config.environment.memory_mb) == (2.0, 6144)
    assert sized.config.environment.storage_mb == own.storage_mb and task.config.environment.memory_mb == own.memory_mb
    laid, _, _ = load_and_lay_out(_spec(memory_mb=3072), tmp_path)
    assert laid.config.environment.memory_mb == 3072 and laid.config.environment.cpus == own.cpus


def test_rollout_service_specs_carry_the_preset_size() -> None:
    from openforge.presets import load_preset
    from training.workflows.common import rollout_service

    service = rollout_service(load_preset("browser-use", {"engine.kind": "local", "engine.device": "cpu",
                                                          "engine.gpu_memory_utilization": None}), engine=None, run_id="x")
    spec = service.specs([load_task(EXAMPLE)], 1)[0]
    assert (spec.cpus, spec.memory_mb) == (2.0, 6144)
