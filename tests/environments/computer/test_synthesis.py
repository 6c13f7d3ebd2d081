"""`openforge synthesize --domain computer-use` (procedural backend) builds verified
computer-use task dirs: only computer-use families are proposed, and each verified task's
oracle passed and no-op failed in the synthesis test stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environments.taskdir import load_task, validate_task

from .conftest import needs_desktop

REPO = Path(__file__).resolve().parents[3]
pytestmark = [needs_desktop(), pytest.mark.slow]


@pytest.mark.timeout(900)
def test_procedural_synthesis_of_computer_use_tasks(openforge_home: Path) -> None:
    env = {**os.environ, "OPENFORGE_HOME": str(openforge_home), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "cli", "synthesize", "--domain", "computer-use", "--n", "3",
                          "--backend", "procedural", "--workers", "2", "--json"],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=850, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["status"] == "done" and doc["tasks"] == {"verified": 3}
    for d in doc["verified_dirs"]:
        task = load_task(d)
        assert validate_task(Path(d)) == []
        assert task.config.openforge.domain == "computer-use"
        assert (Path(d) / "solution" / "actions.json").is_file()
