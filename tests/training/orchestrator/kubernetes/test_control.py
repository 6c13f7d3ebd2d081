"""The control endpoint and the in-pod entry, end to end over real HTTP (no cluster):
assignment long poll, tests delivered only on the agent_done line, logs sent back, the
pod key kept from the runner, the exit status passed through."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx

from training.orchestrator.kubernetes.control import Assignment, ControlServer, tar_dir

ENTRY = Path(__file__).resolve().parents[4] / "training/orchestrator/kubernetes/pod_entry.py"

RUNNER = r"""
import os, sys, time, pathlib
tests = pathlib.Path(sys.argv[1]); logs = pathlib.Path(sys.argv[2])
assert "OPENFORGE_POD_KEY" not in os.environ, "pod key leaked to the runner"
print("saw task:", open(os.path.join(sys.argv[3], "instruction.md")).read().strip(), flush=True)
print("tests before:", sorted(p.name for p in tests.iterdir()), flush=True)
print("OPENFORGE_PHASE agent_done", flush=True)
for _ in range(200):
    if (tests / "test.sh").exists():
        break
    time.sleep(0.05)
print("tests after:", (tests / "test.sh").read_text().strip(), flush=True)
(logs / "verifier").mkdir(parents=True, exist_ok=True)
(logs / "verifier" / "reward.txt").write_text("1\n")
print("env:", os.environ.get("ROLL_ENV"), flush=True)
sys.exit(7)
"""


async def test_pod_entry_round_trip(tmp_path: Path) -> None:
    task = tmp_path / "bank" / "t"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("do it\n")
    (task / "tests" / "test.sh").write_text("echo verify\n")
    (task / "tests" / "helper.py").write_text("x = 1\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("secret\n")
    pod = tmp_path / "pod"
    dirs = {k: pod / k for k in ("task", "tests", "logs", "solution", "work")}
    dirs["work"].mkdir(parents=True)
    kept_logs = tmp_path / "kept-logs"

    server = ControlServer()
    await server.start()
    try:
        slot = server.register("key-1", "pod-1")
        task_tar = tar_dir(task, skip_top=("tests", "solution"))
        assignment = Assignment(rollout_id="r1", argv=["python3", "-c", RUNNER, str(dirs["tests"]), str(dirs["logs"]),
                                                       str(dirs["task"])],
                                env={"ROLL_ENV": "yes"}, workdir=str(dirs["work"]), task_tar=task_tar,
                                task_dir=str(dirs["task"]), tests_dir=str(dirs["tests"]), logs_dir=str(dirs["logs"]),
                                solution_dir=str(dirs["solution"]))
        env = {"OPENFORGE_CONTROL_URL": server.url, "OPENFORGE_POD_KEY": "key-1", "PATH": "/usr/bin:/bin",
               "HOME": str(tmp_path / "home")}
        proc = await asyncio.create_subprocess_exec(sys.executable, "-P", str(ENTRY), env=env,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await asyncio.wait_for(slot.polled.wait(), 20)  # parked, like a warm pod
        assert slot.fetched_at is None
        tests_tar = tar_dir(task / "tests")

        async def tests() -> bytes:
            return tests_tar

        slot.assign(assignment, tests=tests, logs_dir=kept_logs)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        text = out.decode()
        assert proc.returncode == 7, (text, err.decode())
        assert "saw task: do it" in text
        assert "tests before: []" in text  # nothing of tests/ before the agent was done
        assert "tests after: echo verify" in text and (dirs["tests"] / "helper.py").is_file()
        assert "env: yes" in text
        assert not (dirs["task"] / "tests").exists() and not (dirs["task"] / "solution").exists()
        assert not (dirs["solution"] / "solve.sh").exists()  # not the oracle: no solution sent
        assert slot.fetched_at is not None and slot.agent_done_at is not None
        assert (kept_logs / "verifier" / "reward.txt").read_text() == "1\n"  # /logs came back
        async with httpx.AsyncClient() as client:
            bad = await client.get(f"{server.url}/v1/assignment", headers={"authorization": "Bearer nope"})
            assert bad.status_code == 401
    finally:
        await server.aclose()


async def test_released_pod_gets_gone(tmp_path: Path) -> None:
    server = ControlServer()
    await server.start()
    try:
        server.register("k", "p")
        async with httpx.AsyncClient(timeout=10) as client:
            poll = asyncio.create_task(client.get(f"{server.url}/v1/assignment?wait=5",
                                                  headers={"authorization": "Bearer k"}))
            await asyncio.sleep(0.3)
            server.unregister("k")
            resp = await poll
            assert resp.status_code == 410
            empty = await client.get(f"{server.url}/v1/assignment?wait=0", headers={"authorization": "Bearer k"})
            assert empty.status_code == 401
    finally:
        await server.aclose()
