"""A rollout's generation budget, applied by the proxy to every call whatever the harness sends.

Two caps, both optional: ``max_tokens`` bounds one call's generation, ``max_total_tokens``
the tokens generated over all of a rollout's calls together. Each call's ``max_tokens`` is
set to the smallest of what the harness asked for (nothing counts as no bound), the per-call
cap and what is left of the rollout's budget after the tokens already generated and those
reserved by calls still in flight. With nothing left the call is refused: HTTP 400, code
:data:`BUDGET_EXHAUSTED`, in the caller's own API format; the marker is in the message too,
so the in-sandbox runner can tell a spent budget from a crash in the harness's output
(environments/runner/classify.py treats it like the agent timeout: the verifier runs).

Pure bookkeeping, no I/O; the proxy keeps one :class:`BudgetLedger` per rollout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Error code (and message marker) of a call refused because the rollout's budget is spent.
BUDGET_EXHAUSTED = "rollout_budget_exhausted"
_KEYS = ("max_tokens", "max_total_tokens")


class BudgetExhausted(Exception):
    """The rollout has no generation budget left; ``str()`` is the message the caller gets."""


@dataclass(frozen=True)
class GenerationBudget:
    """Per-call and per-rollout caps on generated tokens; ``None`` means no cap."""

    max_tokens: int | None = None
    max_total_tokens: int | None = None

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"budget {key} must be a positive integer or null, got {value!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> GenerationBudget:
        """The budget named by ``data``'s ``max_tokens``/``max_total_tokens`` (other keys ignored)."""
        if not data:
            return cls()
        return cls(**{k: data[k] for k in _KEYS if data.get(k) is not None})

    def to_dict(self) -> dict[str, int]:
        return {k: v for k in _KEYS if (v := getattr(self, k)) is not None}

    def over(self, default: GenerationBudget) -> GenerationBudget:
        """This budget, with ``default``'s caps where this one sets none."""
        return GenerationBudget(
            max_tokens=self.max_tokens if self.max_tokens is not None else default.max_tokens,
            max_total_tokens=self.max_total_tokens if self.max_total_tokens is not None else default.max_total_tokens,
        )


@dataclass
class BudgetLedger:
    """One rollout's budget and what it has spent (generated) and reserved (calls in flight)."""

    budget: GenerationBudget
    generated: int = 0
    reserved: int = 0

    @property
    def left(self) -> int | None:
        total = self.budget.max_total_tokens
        return None if total is None else total - self.generated - self.reserved

    def reserve(self, asked: int | None) -> int | None:
        """The ``max_tokens`` a call may use (reserved until :meth:`settle`); raises when spent."""
        left = self.left
        if left is not None and left <= 0:
            raise BudgetExhausted(
                f"rollout token budget exhausted ({BUDGET_EXHAUSTED}): {self.generated} of "
                f"{self.budget.max_total_tokens} generated tokens spent"
            )
        bounds = [b for b in (asked, self.budget.max_tokens, left) if b is not None]
        grant = min(bounds) if bounds else None
        self.reserved += grant or 0
        return grant

    def settle(self, grant: int | None, generated: int) -> None:
        """A call granted ``grant`` tokens ended having generated ``generated``."""
        self.reserved = max(0, self.reserved - (grant or 0))
        self.generated += max(0, generated)


def asked_max_tokens(chat: Mapping[str, Any]) -> int | None:
    """What an engine-bound chat body asks for (``max_completion_tokens`` wins, as in vLLM)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = chat.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def with_max_tokens(chat: dict[str, Any], grant: int | None) -> dict[str, Any]:
    """``chat`` asking for exactly ``grant`` tokens (unchanged when ``grant`` is None)."""
    if grant is None:
        return chat
    out = {k: v for k, v in chat.items() if k != "max_completion_tokens"}
    out["max_tokens"] = grant
    return out


def generated_tokens(answer: Mapping[str, Any]) -> int:
    """Tokens an engine answer generated: ``usage.completion_tokens``, else its choices' token ids."""
    usage = answer.get("usage")
    if isinstance(usage, Mapping) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    return sum(len(c.get("token_ids") or []) for c in answer.get("choices") or [] if isinstance(c, Mapping))
