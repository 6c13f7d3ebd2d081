"""Resumable runs (docs/resume.md): the pipeline's stages are cached by the content of their
inputs, through Prefect's own cache policies and persisted results.

The fast cases run a two-stage chain (distill → SFT) whose stage bodies are counting fakes
standing in for teacher rollouts and training, under the real cache policies, storage,
refresh switch and reuse hook the pipeline uses; the slow case kills the real ``openforge
pipeline`` during SFT and runs the same command again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect import flow, task

from openforge.settings import get_settings
from tasks.cache import (
    in_data_dir,
    note_reuse,
    noting_reuse,
    refreshing,
    results_dir,
)
from tasks.stage_keys import DISTILL_KEY, SFT_KEY
from training.workflows.distill import DistillReport
from training.workflows.sft import SFTReport

REPO = Path(__file__).resolve().parents[2]
CALLS: list[str] = []


def _distill(preset: str, overrides: dict, task_dirs: list[str], teacher: str, n_per_task: int | None,
             model_path: str | None = None) -> DistillReport:
    """Counting stand-in for teacher rollouts: its SFT data is made from the tasks' files."""
    CALLS.append("distill")
    out = get_settings().runs_dir / f"distill-{len(CALLS)}"
    out.mkdir(parents=True)
    parquet, jsonl = out / "sft.parquet", out / "sft.jsonl"
    parquet.write_text("".join(p.read_text() for d in task_dirs for p in sorted(Path(d).rglob("*")) if p.is_file()))
    jsonl.write_text("")
    return DistillReport(run_id=out.name, teacher=teacher, tasks=len(task_dirs), rollouts=len(task_dirs), outcomes={},
                         kept_trajectories=len(task_dirs), filters={}, examples=len(task_dirs), jsonl=str(jsonl),
                         parquet=str(parquet), seconds=0.0)


def _sft(preset: str, overrides: dict, data: str, model_path: str | None = None) -> SFTReport:
    """Counting stand-in for SFT: writes a checkpoint folder."""
    CALLS.append("sft")
    out = get_settings().runs_dir / f"sft-{len(CALLS)}" / "checkpoint"
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(Path(data).read_bytes())
    return SFTReport(run_id=out.parent.name, examples=1, updates=1, losses=[1.0], checkpoint=str(out), curve_png=None,
                     seconds=0.0)


fake_distill = task(_distill, name="distill", cache_policy=DISTILL_KEY, result_serializer="json", on_completion=[note_reuse])
fake_sft = task(_sft, name="sft-train", cache_policy=SFT_KEY, result_serializer="json", on_completion=[note_reuse])


@flow(name="resume-chain")
def chain(task_dirs: list[str], overrides: dict | None = None, fresh: bool = False) -> dict:
    """distill → SFT as the pipeline wires them (data-dir storage, refresh switch, reuse notes)."""
    with refreshing(fresh), noting_reuse() as reused:
        distilled = in_data_dir(fake_distill, 60)("local", overrides or {}, task_dirs, "oracle", None)
        sft = in_data_dir(fake_sft, 60)("local", overrides or {}, distilled.parquet, None)
    return {"reused": list(reused), "checkpoint": sft.checkpoint, "parquet": distilled.parquet}


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A start checkpoint (OPENFORGE_MODEL): only its bytes matter to the cache keys."""
    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"\x01" * 4096)
    monkeypatch.setenv("OPENFORGE_MODEL", str(folder))
    return folder


@pytest.fixture
def task_dirs(tmp_path: Path) -> list[str]:
    dirs = []
    for name in ("task-a", "task-b"):
        root = tmp_path / "bank" / name
        (root / "tests").mkdir(parents=True)
        (root / "instruction.md").write_text(f"Find the contact of {name}.\n")
        (root / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
        dirs.append(str(root))
    return dirs


@pytest.fixture(autouse=True)
def _calls() -> None:
    CALLS.clear()


def test_a_rerun_reuses_distill_and_sft_wherever_the_same_tasks_live(prefect_harness, policy: Path,
                                                                      task_dirs: list[str], tmp_path: Path) -> None:
    first = chain(task_dirs)
    assert CALLS == ["distill", "sft"] and first["reused"] == []
    second = chain(task_dirs)
    assert CALLS == ["distill", "sft"], "the second run called a stage again"
    assert second["reused"] == ["distill", "sft-train"] and second["checkpoint"] == first["checkpoint"]
    assert sorted(p.name.split("-")[0] for p in results_dir().iterdir()) == ["distill", "sft"]
    # the same task contents elsewhere (another synthesis of the same seed, a copied bank): still reused
    moved = [shutil.copytree(d, tmp_path / "moved" / Path(d).name) for d in task_dirs]
    assert chain([str(d) for d in moved])["reused"] == ["distill", "sft-train"] and CALLS == ["distill", "sft"]


def test_a_changed_task_file_reruns_distillation_and_what_follows(prefect_harness, policy: Path,
                                                                  task_dirs: list[str]) -> None:
    chain(task_dirs)
    Path(task_dirs[1], "instruction.md").write_text("Find the e-mail of task-b.\n")
    again = chain(task_dirs)
    assert CALLS == ["distill", "sft", "distill", "sft"], "new SFT data must retrain"
    assert again["reused"] == []


def test_a_changed_start_checkpoint_invalidates_both_stages(prefect_harness, policy: Path, task_dirs: list[str]) -> None:
    chain(task_dirs)
    (policy / "model.safetensors").write_bytes(b"\x02" * 4096)  # new weights, same size, same path
    assert chain(task_dirs)["reused"] == []
    assert CALLS == ["distill", "sft", "distill", "sft"]


def test_only_the_preset_keys_a_stage_reads_invalidate_it(prefect_harness, policy: Path, task_dirs: list[str]) -> None:
    chain(task_dirs)
    assert chain(task_dirs, {"train.lr": 3e-6, "train.kl_coef": 0.01})["reused"] == ["distill", "sft-train"], \
        "a GRPO override must leave distillation and SFT cached"
    assert chain(task_dirs, {"sft.lr": 3e-5})["reused"] == ["distill"]
    assert chain(task_dirs, {"rollout.temperature": 0.5})["reused"] == ["sft-train"], \
        "new rollouts, same SFT data: SFT is keyed by the data's content"
    assert CALLS == ["distill", "sft", "sft", "distill"]


def test_fresh_runs_every_stage_and_its_results_replace_the_cached_ones(prefect_harness, policy: Path,
                                                                        task_dirs: list[str]) -> None:
    first = chain(task_dirs)
    fresh = chain(task_dirs, fresh=True)
    assert CALLS == ["distill", "sft", "distill", "sft"] and fresh["reused"] == []
    after = chain(task_dirs)
    assert after["reused"] == ["distill", "sft-train"]
    assert after["checkpoint"] == fresh["checkpoint"] != first["checkpoint"]


def test_a_cached_result_whose_files_are_gone_runs_again(prefect_harness, policy: Path, task_dirs: list[str]) -> None:
    first = chain(task_dirs)
    shutil.rmtree(Path(first["checkpoint"]).parent)
    again = chain(task_dirs)
    assert CALLS == ["distill", "sft", "sft"] and again["reused"] == ["distill"]
    assert Path(again["checkpoint"]).is_dir()


def test_the_pipeline_tasks_carry_the_content_keys_and_the_cli_a_fresh_flag() -> None:
    from typer.testing import CliRunner

    from cli.app import app
    from tasks.stage_keys import EVALUATE_KEY, RL_KEY, SYNTHESIS_KEY
    from tasks.synthesis import run_synthesis
    from tasks.training import distill_task, evaluate_task, rl_task, sft_task

    assert [t.cache_policy for t in (run_synthesis, distill_task, sft_task, rl_task, evaluate_task)] == \
        [SYNTHESIS_KEY, DISTILL_KEY, SFT_KEY, RL_KEY, EVALUATE_KEY]
    assert "--fresh" in CliRunner().invoke(app, ["pipeline", "--help"], env={"COLUMNS": "200"}).output


def test_a_stage_past_its_ceiling_times_out_once_without_a_retry(prefect_harness) -> None:
    from tasks.retry import infra_only

    attempts: list[int] = []

    @task(retries=1, retry_condition_fn=infra_only)
    def hangs() -> None:
        attempts.append(1)
        for _ in range(300):  # Python-level work: Prefect's timeout interrupts it between bytecodes
            time.sleep(0.1)

    @flow
    def run() -> str:
        return in_data_dir(hangs, 1)(return_state=True).name

    assert run() == "TimedOut" and attempts == [1]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_killing_the_pipeline_during_sft_and_running_it_again_skips_distillation(openforge_home: Path, tiny_policy: Path,
                                                                                 tmp_path: Path) -> None:
    """The issue's check, on the real main job: ``openforge pipeline`` is killed while SFT
    trains (its distillation result is persisted); the same command then reuses synthesis
    and distillation and runs SFT onwards."""
    args = [sys.executable, "-m", "cli", "pipeline", "--preset", "local", "--n-rl-tasks", "1", "--n-sft-tasks", "1",
            "--eval-tasks", "1", "--eval-samples", "1", "--rl-steps", "0", "--seed", "3", "--json",
            "--set", "rollout.concurrency=2", "--set", "rollout.max_tokens=24", "--set", "harness_options.max_steps=2",
            "--set", "sft.epochs=300", "--set", "train.max_prompt_length=4096"]
    env = {**os.environ, "OPENFORGE_HOME": str(openforge_home), "OPENFORGE_MODEL": str(tiny_policy),
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    results = openforge_home / "runs" / "results"
    t0 = time.monotonic()
    first = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        while not any(results.glob("distill-*")):  # distillation done: SFT (300 epochs) is training now
            assert first.poll() is None, first.communicate()[1].decode()[-3000:]
            assert time.monotonic() - t0 < 900, "distillation did not finish within 15 minutes"
            time.sleep(0.5)
        killed_after = time.monotonic() - t0
        time.sleep(2)
        assert first.poll() is None, "the run ended before it could be killed during SFT"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert not any(results.glob("sft-train-*")), "SFT had finished: the kill came too late to test a resume"
    distill_runs = sorted(p.name for p in (openforge_home / "runs").glob("distill-*"))
    t1 = time.monotonic()
    second = subprocess.run(args, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stderr[-3000:]
    summary = json.loads(second.stdout.strip().splitlines()[-1])
    print(f"killed after {killed_after:.0f}s; re-run took {time.monotonic() - t1:.0f}s; reused {summary['reused']}")
    assert {"synthesize rl", "synthesize sft", "distill"} <= set(summary["reused"])
    assert "sft-train" not in summary["reused"]
    assert sorted(p.name for p in (openforge_home / "runs").glob("distill-*")) == distill_runs, \
        "the re-run distilled again"
    assert Path(summary["sft"]["checkpoint"], "config.json").is_file()


def test_a_new_preset_key_must_be_placed_in_the_stage_keys() -> None:
    """A stage is keyed by the preset keys it reads (READS in tasks/stage_keys.py). When a key is
    added to or removed from the preset, this fails until someone has decided which stages read
    it; a stage that reads a key missing from its READS would be served stale results."""
    import hashlib

    from openforge.presets import Preset
    from tasks.stage_keys import READS

    sections = {s: v for s, v in Preset().model_dump(mode="json").items() if isinstance(v, dict)}
    keys = sorted(f"{s}.{k}" for s, v in sections.items() if s != "harness_options" for k in v)
    assert len(keys) == 77 and hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16] == "3e1f0352bfcf4e42", (
        "the preset's keys changed: add each new key to READS[stage] in tasks/stage_keys.py for every stage "
        "whose result it can change, then update this count and digest")
    for stage, reads in READS.items():
        for dotted in reads:
            section, _, key = dotted.partition(".")
            assert section in sections and (not key or key in sections[section]), f"{stage} reads unknown {dotted}"
