"""The Prefect flows on tiny settings, under one session-scoped prefect_test_harness."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.params import PipelineParams, SynthesizeParams


async def _artifact_keys() -> set[str]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return {a.key for a in await client.read_artifacts() if a.key}


def test_synthesize_flow_verifies_tasks_and_publishes_tables(prefect_harness, openforge_home: Path) -> None:
    from flows.synthesize import synthesize_flow

    report = asyncio.run(synthesize_flow(SynthesizeParams(domain="claw", n=2, seed=11)))
    assert report["tasks"].get("verified", 0) >= 2
    assert all(Path(d, "tests", "test.sh").is_file() for d in report["verified_dirs"])
    assert {"synthesis-stages", "synthesis-tasks"} <= asyncio.run(_artifact_keys())


def test_flows_reject_an_empty_bank_with_a_clear_error(prefect_harness, openforge_home: Path) -> None:
    from flows.params import RLParams
    from flows.learning import rl_flow

    with pytest.raises(ValueError, match="no verified tasks with domain='claw' purpose='rl'"):
        asyncio.run(rl_flow(RLParams(preset="local", domain="claw", steps=1)))


@pytest.mark.slow
def test_pipeline_flow_runs_every_stage_on_a_tiny_policy(prefect_harness, openforge_home: Path, tiny_policy: Path) -> None:
    from flows.pipeline import pipeline_flow

    overrides = {"rollout.concurrency": 4, "rollout.timeout_sec": 240, "harness_options.max_steps": 3,
                 "rollout.max_tokens": 24, "train.group_size": 2, "train.train_batch_size": 1,
                 "sft.epochs": 1, "train.max_prompt_length": 4096}
    summary = asyncio.run(pipeline_flow(PipelineParams(preset="local", n_rl_tasks=1, n_sft_tasks=1, eval_tasks=1,
                                                       eval_samples=2, rl_steps=0, seed=3, overrides=overrides)))
    assert summary["distill"]["rollouts"] == 1, "sft.teacher_rollouts = 1: the oracle teacher is deterministic"
    assert summary["distill"]["kept_trajectories"] == 1, "the oracle teacher solves its task"
    assert summary["sft"]["examples"] == 1 and summary["sft"]["updates"] == 1 and summary["sft"]["overlong_dropped"] == 0
    assert Path(summary["sft"]["checkpoint"], "config.json").is_file()
    assert summary["rl"] is None
    rows = {r["stage"]: r for r in summary["stages"]}
    assert set(rows) == {"base", "sft", "sft+rl"} and all(r["unscored"] == 0 for r in rows.values())
    # the base policy: base_eval_samples (default 1) per held-out task; the checkpoints the RL gain compares: eval_samples
    assert [rows[k]["n"] for k in ("base", "sft", "sft+rl")] == [PipelineParams().base_eval_samples, 2, 2] == [1, 2, 2]
    assert rows["sft+rl"]["updates"] == 0 and "GRPO skipped" in rows["sft+rl"]["note"]
    assert "gain" not in rows["base"]
    for later, earlier in (("sft", "base"), ("sft+rl", "sft")):  # each step's gain over the one before
        assert rows[later]["gain"] == pytest.approx(rows[later]["mean_reward"] - rows[earlier]["mean_reward"], abs=1e-3)
        assert rows[later]["clear"] == (rows[later]["gain"] > 2 * rows[later]["gain_se"])
    assert Path(summary["radar_png"]).stat().st_size > 1000
    keys = asyncio.run(_artifact_keys())
    assert {"pipeline-summary", "pipeline-report", "evaluation", "behaviour"} <= keys


@pytest.mark.slow
def test_grpo_without_reward_variance_makes_no_update_and_fails_clearly(openforge_home: Path, tiny_policy: Path,
                                                                       tmp_path: Path) -> None:
    """A random tiny policy never earns a point on contact-lookup: every group is zero-variance,
    so GRPO makes no optimiser update; the run says so instead of saving the start weights."""
    from environments.taskdir import load_task, write_task
    from openforge.presets import load_preset
    from synthesis.procedural import generate
    from synthesis.procedural.render import task_config, task_files
    from training.workflows.rl import NoLearningSignal, rl_train

    spec = generate("contact-lookup", 4)
    write_task(tmp_path / spec.name, task_config(spec), spec.instruction, task_files(spec))
    preset = load_preset("local", {"train.group_size": 2, "train.train_batch_size": 1, "rollout.max_tokens": 8,
                                   "harness_options.max_steps": 1, "rollout.concurrency": 2})
    steps: list = []
    with pytest.raises(NoLearningSignal, match=r"0 optimiser updates in 2 steps: 2 of 2 groups had zero reward variance"):
        asyncio.run(rl_train(preset, [load_task(tmp_path / spec.name)], steps=2, on_step=steps.append,
                             out_dir=tmp_path / "run"))
    assert [s.updates for s in steps] == [0, 0] and all(s.zero_variance_groups == s.groups == 1 for s in steps)
    assert not (tmp_path / "run" / "checkpoint").exists()


def test_step_up_is_the_paired_gain_with_its_standard_error_and_verdict() -> None:
    from flows.pipeline import step_up
    from testkit.evaluation import eval_report

    def tasks(rewards: list[list[float]]) -> dict[str, list[float]]:
        return {f"t{i}": r for i, r in enumerate(rewards * 8)}

    before = eval_report(tasks([[0.0, 0.5], [0.5, 0.5], [1.0, 0.5]]))  # per task 0.25 / 0.5 / 0.75
    after = eval_report(tasks([[0.5, 0.5], [1.0, 0.5], [1.0, 1.0]]))  # each task up by 0.25
    assert step_up(before, after) == {"gain": 0.25, "gain_se": 0.0, "paired_tasks": 24, "clear": True}
    mixed = eval_report(tasks([[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]]))  # up 0.5, down 0.25, same
    up = step_up(before, mixed)
    assert up["gain"] == pytest.approx(1 / 12, abs=1e-4) and up["paired_tasks"] == 24
    assert up["gain"] < 2 * up["gain_se"] and up["clear"] is False
