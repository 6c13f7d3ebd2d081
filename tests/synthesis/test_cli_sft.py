"""``openforge synthesize`` CLI: SFT purpose (test/refine skipped) and the summary table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from environments.taskdir import load_task
from storage.db import make_engine, session_scope
from storage.models import Check, Task

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sft_run_skips_test_and_prints_stage_table(openforge_home: Path) -> None:
    env = {**os.environ, "OPENFORGE_HOME": str(openforge_home), "PYTHONPATH": str(REPO), "COLUMNS": "160"}
    cmd = [sys.executable, "-m", "cli", "synthesize", "--n", "3", "--purpose", "sft", "--seed", "3"]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=800)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    for stage in ("propose", "prune", "build", "test", "refine"):
        assert any(line.strip("│ ").startswith(stage) for line in lines), out.stdout
    assert "verified=3" in out.stdout and "total cost $0.0000" in out.stdout
    engine = make_engine(f"sqlite:///{openforge_home / 'openforge.db'}")
    with session_scope(engine) as s:
        tasks = s.execute(select(Task)).scalars().all()
        kinds = {c.kind for c in s.execute(select(Check)).scalars()}
    engine.dispose()
    assert len(tasks) == 3 and all(t.status == "verified" and t.purpose == "sft" for t in tasks)
    assert kinds == {"build", "validate"}  # no oracle/no-op/rollouts for SFT tasks
    assert all(load_task(t.dir).config.openforge.purpose == "sft" for t in tasks)

    bad = subprocess.run([sys.executable, "-m", "cli", "synthesize", "--backend", "gpt"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "synthesize: --backend:" in bad.stderr
