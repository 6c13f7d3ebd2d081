"""End to end: ``openforge synthesize --backend procedural`` killed halfway, then resumed.

The first CLI process is SIGKILLed once some tasks are verified; the re-run must finish the
same run with exactly N distinct verified tasks (oracle 1.0, no-op 0.0, validate clean),
no duplicate tasks or candidates, and a per-stage summary.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from environments.taskdir import validate_task
from storage.db import make_engine, session_scope
from storage.models import Candidate, Check, Task

REPO = Path(__file__).resolve().parents[2]
N = 16


def _cli(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "cli", "synthesize", "--domain", "claw", "--n", str(N),
            "--backend", "procedural", "--workers", "2", *args]


def _verified(engine) -> int:  # noqa: ANN001
    try:
        with session_scope(engine) as s:
            return int(s.execute(select(func.count()).select_from(Task).where(Task.status == "verified")).scalar_one())
    except Exception:  # noqa: BLE001 - tables not created yet
        return 0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_procedural_run_killed_halfway_resumes_to_exactly_n(openforge_home: Path) -> None:
    env = {**os.environ, "OPENFORGE_HOME": str(openforge_home), "PYTHONPATH": str(REPO)}
    engine = make_engine(f"sqlite:///{openforge_home / 'openforge.db'}")
    first = subprocess.Popen(_cli(openforge_home, "--seed", "7", "--json"), cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while _verified(engine) < 4 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert first.poll() is None, first.stderr.read().decode()[-2000:]
        os.killpg(first.pid, signal.SIGKILL)  # no clean-up at all: worst case
        first.wait(30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    killed_at = _verified(engine)
    assert 4 <= killed_at < N

    again = subprocess.run(_cli(openforge_home, "--json"), cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=1500)
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads(again.stdout)
    assert report["resumed"] is True and report["status"] == "done"
    assert report["tasks"] == {"verified": N}
    assert len(report["verified_dirs"]) == N
    for stage in ("propose", "prune", "build", "test"):
        assert report["stages"][stage]["count"] >= 1 and report["stages"][stage]["seconds"] > 0
    assert report["cost_usd"] == 0.0

    with session_scope(engine) as s:
        tasks = s.execute(select(Task)).scalars().all()
        checks = s.execute(select(Check)).scalars().all()
        selected = s.execute(select(Candidate).where(Candidate.status == "selected")).scalars().all()
    assert len(tasks) == N and {t.status for t in tasks} == {"verified"}
    assert len({t.candidate_id for t in tasks}) == N and len({t.content_sha for t in tasks}) == N
    assert len(selected) == N
    on_disk = [p for p in (openforge_home / "tasks").iterdir() if not p.name.startswith(".")]
    assert sorted(p.name for p in on_disk) == sorted(t.id for t in tasks)
    for t in tasks:
        assert validate_task(t.dir) == []
        mine = [c for c in checks if c.task_id == t.id and (c.detail or {}).get("content_sha") == t.content_sha]
        assert [c.reward for c in mine if c.kind == "oracle"] == [1.0]
        assert [c.reward for c in mine if c.kind == "noop"] == [0.0]
    families = {t.id.split("-")[1] for t in tasks}
    assert len(families) >= 5
    engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ctrl_c_gives_back_claimed_work(openforge_home: Path) -> None:
    env = {**os.environ, "OPENFORGE_HOME": str(openforge_home), "PYTHONPATH": str(REPO)}
    engine = make_engine(f"sqlite:///{openforge_home / 'openforge.db'}")
    cmd = [sys.executable, "-m", "cli", "synthesize", "--n", "4", "--workers", "2", "--seed", "11"]
    # SIGINT back to its default: a shell without job control starts background commands
    # (e.g. `.ci/run &`) with SIGINT ignored, and the child would inherit that and finish.
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with session_scope(engine) as s:
                    if s.execute(select(Task.id).where(Task.status == "testing")).first():
                        break
            except Exception:  # noqa: BLE001 - tables not created yet
                pass
            time.sleep(0.2)
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (out + err).decode()[-3000:]  # stdout too: a finished run prints its table
    assert b"re-run the same command to continue" in err
    with session_scope(engine) as s:
        rows = s.execute(select(Task.status, Task.claimed_by)).all()
    engine.dispose()
    assert rows and all(claimed is None for _, claimed in rows), (rows, err.decode()[-3000:])
    assert not any(status == "testing" for status, _ in rows)
