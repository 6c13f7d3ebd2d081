"""scripts/gpu_trainer_check.py (the local trainer's checks on a GPU node) runs its checks on
CPU here, so the script a GPU session runs cannot rot between GPU sessions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_gpu_trainer_check_passes_every_check_on_cpu() -> None:
    env = {**os.environ, "OPENFORGE_CHECK_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_trainer_check.py")], env=env, cwd=ROOT,
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("ok ") for line in lines) == 6, done.stdout
    assert not any(line.startswith("FAIL") for line in lines)
    assert any("first-epoch ratio at T=1.3 top_p=0.8 top_k=20: engine ratio 1.000000" in line for line in lines)


def test_the_check_refuses_to_run_without_the_device_it_names() -> None:
    env = {**os.environ, "OPENFORGE_CHECK_DEVICE": "cuda", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_trainer_check.py")], env=env, cwd=ROOT,
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "no CUDA device" in done.stderr
