"""Thread work waited for through repeated cancels (openforge.aio), and the synthesis claim
that depends on it: a cancel scope re-delivers its cancel every loop turn, and a claim landing
meanwhile must still be given back."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from openforge.aio import in_thread_to_the_end, thread_outcome


async def _cancel_over_and_over(task: asyncio.Task, until: threading.Event) -> int:
    """Cancel ``task`` on every loop turn (as an anyio cancel scope does) until ``until`` is set."""
    n = 0
    while not task.done() and not until.is_set():
        task.cancel()
        n += 1
        await asyncio.sleep(0)
    return n


def _slow(value: str, finished: threading.Event, seconds: float = 0.3) -> str:
    time.sleep(seconds)
    finished.set()
    return value


async def test_the_result_of_thread_work_reaches_a_caller_cancelled_many_times() -> None:
    finished = threading.Event()
    seen: list[tuple[str, bool]] = []

    async def caller() -> None:
        seen.append(await thread_outcome(_slow, "claimed", finished))

    task = asyncio.ensure_future(caller())
    await asyncio.sleep(0.01)
    cancels = await _cancel_over_and_over(task, finished)
    await asyncio.wait([task])
    assert cancels > 10
    assert seen == [("claimed", True)]


async def test_in_thread_to_the_end_raises_the_cancel_only_after_the_work_ended() -> None:
    finished = threading.Event()
    task = asyncio.ensure_future(in_thread_to_the_end(_slow, "x", finished))
    await asyncio.sleep(0.01)
    await _cancel_over_and_over(task, finished)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()


async def test_without_a_cancel_the_value_or_the_error_comes_back_as_is() -> None:
    assert await in_thread_to_the_end(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(ZeroDivisionError):
        await in_thread_to_the_end(lambda: 1 / 0)


async def test_a_synthesis_claim_landing_under_repeated_cancels_is_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthesis import pipeline

    finished = threading.Event()
    given_back: list[tuple[str, str]] = []
    monkeypatch.setattr(pipeline, "claim_next", lambda engine, stage, wid, domain=None: _slow("t1", finished))
    monkeypatch.setattr(pipeline, "_give_back", lambda engine, tid, wid: given_back.append((tid, wid)))

    class _Ctx:
        engine = None

        class config:  # noqa: N801 - stands in for SynthConfig
            domain = "claw"

    task = asyncio.ensure_future(pipeline._claim(_Ctx(), "test", "host:1:0"))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    await _cancel_over_and_over(task, finished)
    await asyncio.wait([task])
    for _ in range(50):  # a last cancel may land while the give-back runs: wait it out
        if given_back:
            break
        await asyncio.sleep(0.01)
    assert task.cancelled()
    assert given_back == [("t1", "host:1:0")]
