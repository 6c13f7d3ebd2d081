"""Stage functions on their own: agent tools' confinement, and the test stage's rollouts
(k test-model rollouts through the injected checker seam, never repeated on resume)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from environments.taskdir import write_task
from storage.claims import claim_next
from storage.db import session_scope
from storage.models import Check, Task, TaskStatus
from synthesis.checker import CheckOutcome
from synthesis.config import SynthConfig, SynthContext
from synthesis.procedural.families import generate
from synthesis.procedural.render import task_config, task_files
from synthesis.stages.testing import run_checks_one
from synthesis.store import start_or_resume_run, worker_id
from synthesis.tools import build_tools
from tests.synthesis.checks import sandbox_checker


class RolloutLog:
    """The rollout seam a flow would wire to the scheduler: here, scripted rewards."""

    def __init__(self, rewards: list[float]) -> None:
        self.rewards = rewards
        self.calls: list[str] = []

    async def __call__(self, task_dir: Path, harness: str) -> CheckOutcome:
        self.calls.append(harness)
        logs = task_dir.parent / f"logs-{len(self.calls)}"
        logs.mkdir(exist_ok=True)
        (logs / "agent.log").write_text("model said: done\n")
        reward = self.rewards[(len(self.calls) - 1) % len(self.rewards)]
        return CheckOutcome(harness=harness, reward=reward, cost_usd=0.01, log_path=str(logs))


def test_build_tools_stay_inside_the_task_dir(tmp_path: Path) -> None:
    staging = tmp_path / "task"
    staging.mkdir()
    rollouts = RolloutLog([0.0])
    outcomes: list[CheckOutcome] = []
    tools = {t.name: t for t in build_tools(staging, sandbox_checker(rollouts), outcomes, "mini")}

    async def go() -> None:
        text, err = await tools["write_file"].invoke({"path": "tests/test.sh", "content": "#!/bin/sh\nexit 0\n"})
        assert not err and os.access(staging / "tests" / "test.sh", os.X_OK)
        for bad in ("../escape.txt", "/etc/passwd", "tests/../../x"):
            text, err = await tools["write_file"].invoke({"path": bad, "content": "x"})
            assert err and "task dir" in text
        assert not (tmp_path / "escape.txt").exists()
        text, err = await tools["read_file"].invoke({"path": "tests/test.sh"})
        assert text.startswith("#!/bin/sh") and not err
        text, err = await tools["validate_task"].invoke({})
        assert '"ok": false' in text and "task.toml" in text
        text, err = await tools["run_check"].invoke({"harness": "codex"})
        assert err and "use one of" in text

    asyncio.run(go())
    assert rollouts.calls == []


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_test_stage_pass_rate_and_no_repeated_rollouts(db_engine, openforge_home: Path, tmp_path: Path) -> None:
    rid, _ = start_or_resume_run(db_engine, {"domain": "claw", "backend": "procedural", "purpose": "rl"})
    spec = generate("kb-answer-ticket", 4, "easy")
    td = write_task(tmp_path / "tasks" / "t1", task_config(spec, run_id=rid), spec.instruction, task_files(spec))
    with session_scope(db_engine) as s:
        s.add(Task(id="t1", dir=str(td.path), status=TaskStatus.built.value, domain="claw", synth_run_id=rid,
                   content_sha=td.config.openforge.content_sha))
    rollouts = RolloutLog([1.0, 0.0, 1.0, 1.0])
    ctx = SynthContext(engine=db_engine, run_id=rid, config=SynthConfig(n=1, k_rollouts=4, test_harness="mini"),
                       tasks_dir=tmp_path / "tasks", work_dir=tmp_path / "work",
                       checker=sandbox_checker(rollouts))
    wid = worker_id(0)
    assert claim_next(db_engine, "test", wid) == "t1"
    stats = asyncio.run(run_checks_one(ctx, "t1", wid))
    assert stats.count == 1 and abs(stats.cost_usd - 0.04) < 1e-9
    assert rollouts.calls == ["mini"] * 4
    with session_scope(db_engine) as s:
        task = s.get(Task, "t1")
        kinds = sorted(c.kind for c in s.query(Check).filter(Check.task_id == "t1"))
        assert task.status == "verified" and task.pass_rate == 0.75 and abs(task.cost_usd - 0.04) < 1e-9
        task.status = TaskStatus.built.value  # as if the run had crashed before recording the verdict
    assert kinds == ["noop", "oracle", "rollout", "rollout", "rollout", "rollout", "validate"]
    assert claim_next(db_engine, "test", wid) == "t1"
    asyncio.run(run_checks_one(ctx, "t1", wid))
    assert len(rollouts.calls) == 4  # recorded rollouts of the same content are reused
    with session_scope(db_engine) as s:
        assert s.get(Task, "t1").pass_rate == 0.75
        assert s.query(Check).filter(Check.task_id == "t1").count() == 7
