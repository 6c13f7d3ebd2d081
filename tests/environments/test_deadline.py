"""A timeout whose clock stops while the engine answers (environments/deadline.py)."""

from __future__ import annotations

import asyncio

import pytest

from environments.deadline import hard_deadline, wait_excluding_engine


def clock(*readings: float):  # noqa: ANN201 - the engine-seconds callback
    values = list(readings)

    async def engine_seconds() -> float:
        return values.pop(0) if len(values) > 1 else values[0]

    return engine_seconds


async def test_work_within_the_timeout_returns_its_value() -> None:
    async def work() -> str:
        await asyncio.sleep(0.01)
        return "done"

    assert await wait_excluding_engine(work(), 1.0, clock(0.0)) == "done"


async def test_time_spent_in_the_engine_does_not_count() -> None:
    """0.6 s of work under a 0.3 s timeout finishes: 0.5 s of it were the engine's."""
    async def work() -> str:
        await asyncio.sleep(0.6)
        return "done"

    assert await wait_excluding_engine(work(), 0.3, clock(0.5)) == "done"


async def test_the_agents_own_time_past_the_timeout_ends_it_and_cancels_the_work() -> None:
    cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError, match=r"0.2s \(\+0s in the engine\)"):
        await wait_excluding_engine(work(), 0.2, clock(0.0))
    assert loop.time() - t0 < 1.0
    assert cancelled.is_set()


async def test_a_wedged_engine_cannot_extend_the_deadline_past_its_cap() -> None:
    """An engine that never answers keeps its clock running: the extension stops at
    max_extension x timeout (here 0.2 + 2 x 0.2 = 0.6 s of wall time)."""
    started = asyncio.get_running_loop().time()

    async def ever_growing() -> float:
        return asyncio.get_running_loop().time() - started  # all the time is the engine's

    with pytest.raises(TimeoutError):
        await wait_excluding_engine(asyncio.sleep(5), 0.2, ever_growing, max_extension=2.0)
    assert 0.55 < asyncio.get_running_loop().time() - started < 1.5
    assert hard_deadline(300) == 1200  # the pod deadline a 300 s timeout gets (3 extensions)


async def test_without_an_engine_clock_it_is_a_plain_timeout() -> None:
    async def broken() -> float:
        raise ConnectionError("proxy gone")

    with pytest.raises(TimeoutError):
        await wait_excluding_engine(asyncio.sleep(5), 0.1, broken)
    with pytest.raises(TimeoutError):
        await wait_excluding_engine(asyncio.sleep(5), 0.1, None)
    assert await wait_excluding_engine(asyncio.sleep(0, "x"), None, None) == "x"
