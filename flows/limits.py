"""The paid-API global limits on the Prefect server: create or repair them, idempotently.

Per paid API (:data:`tasks.paid_api.PAID_API_LIMITS`) a concurrency limit (``slot_decay_per_second``
0: a slot is freed when its call ends) and a rate limit (``slot_decay_per_second`` =
calls per second). A missing limit is created; an existing one keeps the slots and rate an
operator gave it (``prefect gcl update``) and is updated only where it cannot serve its role
(a concurrency limit that decays, a rate limit that does not), or everywhere with
``overwrite=True``. Runs against whatever API Prefect is configured for: ``PREFECT_API_URL``
or the embedded one of ``PREFECT_HOME``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tasks.paid_api import PAID_API_LIMITS, PaidApiLimit


@dataclass(frozen=True)
class LimitSpec:
    """One global limit as the server should hold it."""

    name: str
    limit: int
    slot_decay_per_second: float

    @property
    def is_rate(self) -> bool:
        return self.slot_decay_per_second > 0


@dataclass(frozen=True)
class LimitState:
    """What :func:`ensure_paid_api_limits` did to one limit, and the limit as it now stands."""

    name: str
    action: Literal["created", "updated", "kept"]
    limit: int
    slot_decay_per_second: float

    def line(self) -> str:
        kind = f"rate {self.slot_decay_per_second:g}/s, burst {self.limit}" if self.slot_decay_per_second else \
            f"{self.limit} concurrent"
        return f"limit {self.name} ({kind}): {self.action}"


def specs(limits: Iterable[PaidApiLimit]) -> list[LimitSpec]:
    """The two server-side limits of each paid API."""
    out = []
    for api in limits:
        out.append(LimitSpec(api.name, api.slots, 0.0))
        out.append(LimitSpec(api.rate_name, api.burst, api.calls_per_second))
    return out


def ensure_paid_api_limits(limits: Iterable[PaidApiLimit] | None = None, *, overwrite: bool = False) -> list[LimitState]:
    """Create the paid APIs' concurrency and rate limits that are missing, repair those that
    cannot serve their role (``overwrite``: set every value); returns one state per limit."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import (
        GlobalConcurrencyLimitCreate,
        GlobalConcurrencyLimitUpdate,
    )
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    states = []
    with get_client(sync_client=True) as client:
        for spec in specs(PAID_API_LIMITS.values() if limits is None else limits):
            try:
                have = client.read_global_concurrency_limit_by_name(spec.name)
            except ObjectNotFound:
                try:
                    client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(
                        name=spec.name, limit=spec.limit, slot_decay_per_second=spec.slot_decay_per_second))
                    states.append(LimitState(spec.name, "created", spec.limit, spec.slot_decay_per_second))
                    continue
                except ObjectAlreadyExists:  # created by someone else meanwhile
                    have = client.read_global_concurrency_limit_by_name(spec.name)
            decay = float(have.slot_decay_per_second or 0.0)
            wrong_role = (decay > 0) != spec.is_rate
            if overwrite and (have.limit, decay) != (spec.limit, spec.slot_decay_per_second) or wrong_role:
                limit = spec.limit if overwrite else have.limit
                client.update_global_concurrency_limit(spec.name, GlobalConcurrencyLimitUpdate(
                    limit=limit, slot_decay_per_second=spec.slot_decay_per_second))
                states.append(LimitState(spec.name, "updated", limit, spec.slot_decay_per_second))
            else:
                states.append(LimitState(spec.name, "kept", have.limit, decay))
    return states
