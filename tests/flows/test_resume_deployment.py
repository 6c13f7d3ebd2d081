"""A deployed ``pipeline/local`` resumes like the CLI (docs/resume.md): through a real Prefect
server and process worker, the same parameters again end every stage ``Cached``, and
``fresh: true`` (the flow parameter the deployment form shows) runs them all again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.flows.test_deployment_e2e import (
    PREFECT,
    REPO,
    _free_port,
    _stop,
    _wait_healthy,
)


def _cached_stages(api: str) -> Counter:
    """Task runs in state Cached, by task name (``distill-3f2`` → ``distill``)."""
    runs = httpx.post(f"{api}/task_runs/filter", json={"task_runs": {"state": {"name": {"any_": ["Cached"]}}}},
                      timeout=30).json()
    return Counter(r["name"].rsplit("-", 1)[0] for r in runs)


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_deployed_pipeline_run_again_reuses_every_stage_and_fresh_reruns_them(tmp_path: Path, openforge_home: Path,
                                                                                tiny_policy: Path) -> None:
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_API_PORT": str(port),
           "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_LOGGING_LEVEL": "WARNING",
           "OPENFORGE_HOME": str(openforge_home), "OPENFORGE_MODEL": str(tiny_policy)}
    params = {"preset": "local", "n_rl_tasks": 1, "n_sft_tasks": 1, "eval_tasks": 1, "eval_samples": 1, "rl_steps": 0,
              "seed": 5, "overrides": {"rollout.concurrency": 4, "harness_options.max_steps": 2, "rollout.max_tokens": 16,
                                       "sft.epochs": 1, "train.max_prompt_length": 4096}}

    def run(**extra: object) -> None:
        done = subprocess.run([PREFECT, "deployment", "run", "pipeline/local", "--param",
                               f"params={json.dumps({**params, **extra})}", "--watch", "--watch-timeout", "900"],
                              check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=1000)
        assert "finished successfully" in done.stdout + done.stderr, (
            done.stdout[-2000:] + done.stderr[-2000:] + "\nworker log:\n" + (tmp_path / "worker.log").read_text()[-6000:])

    server = worker = None
    try:
        server = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_healthy(api, server)
        deployed = subprocess.run([sys.executable, "-m", "cli", "deploy"], check=False, cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=600)
        assert deployed.returncode == 0, deployed.stderr + deployed.stdout
        with (tmp_path / "worker.log").open("w") as worker_log:
            worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", "openforge-gpu", "--limit", "1"],
                                      cwd=REPO, env=env, stdout=worker_log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
            run()
            assert _cached_stages(api) == Counter()
            run()
            stages = {"synthesize": 2, "distill": 1, "sft-train": 1, "evaluate": 3}
            assert _cached_stages(api) == Counter(stages), "a stage of the unchanged second run ran again"
            assert len(list((openforge_home / "runs").glob("distill-*"))) == 1
            run(fresh=True)
            assert _cached_stages(api) == Counter(stages), "fresh: true reused a stage"
            assert len(list((openforge_home / "runs").glob("distill-*"))) == 2
    finally:
        _stop(worker)  # the worker before the server
        _stop(server)
