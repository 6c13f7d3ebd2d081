"""Progress (tasks/progress.py, cli/progress.py): plain lines when stderr is not a terminal, a
heartbeat while nothing moves, and Prefect progress artifacts from trackers inside a run."""

from __future__ import annotations

import io
import time

from rich.console import Console

from cli.progress import PlainLines
from tasks.progress import ProgressEvent, artifact_key


def _plain(heartbeat_s: float = 3600.0) -> tuple[PlainLines, io.StringIO]:
    out = io.StringIO()
    return PlainLines(Console(file=out, force_terminal=False, width=200), "pipeline", heartbeat_s=heartbeat_s), out


def test_plain_lines_name_each_stage_and_each_tenth_of_a_tracker() -> None:
    view, out = _plain()
    with view:
        view(ProgressEvent("stage", "stage", "distill + SFT", 2, 5))
        for done in range(0, 21):
            view(ProgressEvent("work", "evaluate-base", "evaluate base", done, 20, "rollouts"))
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines[0] == "pipeline: starting (Prefect flow run)"
    assert lines[1] == "stage 3/5: distill + SFT"
    evaluate = [line for line in lines if line.startswith("evaluate base")]
    # the first event, then every 2 of 20 rollouts (a tenth), the last one included
    assert evaluate == [f"evaluate base: {n}/20 rollouts" for n in range(0, 21, 2)]


def test_a_heartbeat_line_says_what_is_still_running() -> None:
    view, out = _plain(heartbeat_s=0.2)
    with view:
        view(ProgressEvent("work", "sft", "SFT", 3, 40, "updates", "loss 1.2000"))
        time.sleep(5.5)  # the heartbeat thread looks every min(heartbeat, 5 s)
    text = out.getvalue()
    assert "SFT: 3/40 updates (loss 1.2000)" in text
    assert "still running: SFT: 3/40 updates" in text


def test_artifact_keys_are_what_prefect_accepts() -> None:
    assert artifact_key("synthesis-claw-rl") == "synthesis-claw-rl-progress"
    assert artifact_key("evaluate-SFT+RL") == "evaluate-sft-rl-progress"


def test_a_tracker_in_a_flow_run_publishes_and_completes_a_progress_artifact(prefect_harness) -> None:
    import asyncio

    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from tasks.progress import track

    @task
    async def work() -> None:
        tracker = track("unit-test", "unit test", 4, "items")
        for _ in range(4):
            tracker.advance()

    @flow
    async def run() -> None:
        await work()

    async def latest() -> list:
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["unit-test-progress"])))

    asyncio.run(run())
    artifacts = asyncio.run(latest())
    assert artifacts and artifacts[0].type == "progress"
    assert float(artifacts[0].data) == 100.0
