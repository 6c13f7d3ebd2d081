"""End to end through a real Prefect server: deploy prefect.yaml, run a worker, run
`pipeline/local` with small parameters, wait for COMPLETED, find its artifacts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(api: str, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prefect server exited with {proc.returncode}")
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError("prefect server did not become healthy")


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_pipeline_deployment_runs_on_a_process_worker(tmp_path: Path, openforge_home: Path, tiny_policy: Path) -> None:
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = os.environ.copy()
    env.update({
        "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_LOGGING_LEVEL": "WARNING",
        "OPENFORGE_HOME": str(openforge_home), "OPENFORGE_MODEL": str(tiny_policy),
    })
    server = worker = None
    try:
        server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_healthy(api, server)
        deployed = subprocess.run([sys.executable, "-m", "cli", "deploy"], cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=600)
        assert deployed.returncode == 0, deployed.stderr + deployed.stdout
        assert "work pool openforge-gpu" in deployed.stdout
        worker_log = (tmp_path / "worker.log").open("w")
        worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", "openforge-gpu", "--limit", "1"], cwd=REPO,
                                  env=env, stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
        params = {"preset": "local", "n_rl_tasks": 1, "n_sft_tasks": 1, "eval_tasks": 1, "eval_samples": 1, "rl_steps": 0, "seed": 5,
                  "overrides": {"rollout.concurrency": 4, "harness_options.max_steps": 2, "rollout.max_tokens": 16,
                                "train.group_size": 2, "train.train_batch_size": 1, "sft.epochs": 1,
                                "train.max_prompt_length": 4096}}
        run = subprocess.run([PREFECT, "deployment", "run", "pipeline/local", "--param", f"params={json.dumps(params)}",
                              "--watch", "--watch-timeout", "1200"], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=1300)
        assert "finished successfully" in run.stdout + run.stderr, (
            run.stdout[-2000:] + run.stderr[-2000:] + "\nworker log:\n" + (tmp_path / "worker.log").read_text()[-6000:])
        artifacts = httpx.post(f"{api}/artifacts/filter", json={}, timeout=30).json()
        keys = {a["key"] for a in artifacts if a.get("key")}
        assert {"pipeline-summary", "pipeline-report", "synthesis-stages", "evaluation"} <= keys
    finally:
        _stop(worker)  # the worker before the server
        _stop(server)
        shutil.rmtree(tmp_path / "prefect-home", ignore_errors=True)
