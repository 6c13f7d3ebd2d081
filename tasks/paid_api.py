"""Paid model APIs under Prefect global limits, acquired per call.

Each paid API has two global limits on the Prefect server (created by
:func:`flows.limits.ensure_paid_api_limits`, which ``openforge init`` and ``openforge deploy``
call): a concurrency limit named after the API (``anthropic-api``: slots held for the length
of one call) and a rate limit ``<name>-rate`` (``slot_decay_per_second`` > 0: how many calls
may start per second, ``burst`` at once). A synthesis runtime enters :func:`prefect_call_gate`
around every call, so concurrent calls of every flow, worker and machine sharing the server
stay within the slots whatever the synthesis parallelism. Both are acquired with
``strict=True``: a server without them fails the call at once, naming the limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from synthesis.runtime.base import CallGate


@dataclass(frozen=True)
class PaidApiLimit:
    """One paid API's limits: ``slots`` concurrent calls, ``calls_per_second`` starts (``burst`` at once)."""

    name: str
    slots: int
    calls_per_second: float
    burst: int

    def __post_init__(self) -> None:
        if self.slots < 1 or self.burst < 1 or self.calls_per_second <= 0:
            raise ValueError(f"{self.name}: slots and burst must be >= 1 and calls_per_second > 0")

    @property
    def rate_name(self) -> str:
        """Name of the rate limit (the concurrency limit is :attr:`name`)."""
        return f"{self.name}-rate"


#: Synthesis backend → its API's limits. ``claude``: one call is one agent call (a Claude Code
#: process, which makes its requests one at a time); ``openai``: one call is one request.
PAID_API_LIMITS: dict[str, PaidApiLimit] = {
    "claude": PaidApiLimit("anthropic-api", slots=4, calls_per_second=0.5, burst=4),
    "openai": PaidApiLimit("openai-api", slots=8, calls_per_second=4.0, burst=8),
}


def prefect_call_gate(limit: PaidApiLimit) -> CallGate:
    """A :data:`~synthesis.runtime.base.CallGate` holding one slot of ``limit`` for each call,
    and one start of its rate limit once the slot is held (so waiting calls do not spend the
    rate, and a call starts right after its token)."""

    @asynccontextmanager
    async def gate() -> AsyncIterator[None]:
        from prefect.concurrency.asyncio import concurrency, rate_limit

        async with concurrency(limit.name, occupy=1, strict=True):
            await rate_limit(limit.rate_name, occupy=1, strict=True)
            yield

    return gate


def gate_for_backend(backend: str) -> CallGate | None:
    """The call gate of a synthesis backend (None for ``procedural``, which calls no API)."""
    limit = PAID_API_LIMITS.get(backend)
    return None if limit is None else prefect_call_gate(limit)
