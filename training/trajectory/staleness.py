"""Bounded staleness: which finished rollouts a step may train on, and how (issue 17).

Every recorded call carries the ``policy_version`` it was admitted under (the local engine
adds ``policy_version_final`` to the stored response when its weights changed
mid-generation). At a step whose trainer is at version ``current``, a call's staleness is
``current − policy_version``; a trajectory is as stale as its oldest call.

- staleness ≤ ``max_staleness``: trained as usual (π_old = each call's recorded logprobs);
- older: ``stale_policy = "drop"`` leaves the whole trajectory out (its group's advantages
  are computed over the members left), ``"correct"`` keeps it and the step runs with
  truncated importance sampling against every call's recorded logprobs;
- a trajectory whose calls were sampled by more than one version ("spanning"):
  ``span_policy = "per_call"`` trains each call against the logprobs its own version
  recorded (prefix merging never joins calls of two versions, ``merge.py``), ``"drop"``
  leaves it out.

Calls without a recorded version cannot be placed: they count as infinitely stale.
Everything is counted in :class:`StalenessReport` (the step's metrics), nothing is mixed
silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from training.trajectory.records import RecordedCall

#: Staleness of a call whose version is unknown (never within any bound).
UNKNOWN = 10**9


@dataclass(frozen=True)
class StalenessPolicy:
    max_staleness: int = 1
    stale_policy: Literal["drop", "correct"] = "drop"
    span_policy: Literal["per_call", "drop"] = "per_call"

    @classmethod
    def from_train(cls, cfg: Any) -> StalenessPolicy:
        """From a preset's ``[train]`` section."""
        return cls(max_staleness=cfg.max_staleness, stale_policy=cfg.stale_policy, span_policy=cfg.span_policy)


@dataclass
class StalenessReport:
    """What a step's staleness filter saw, kept, dropped and corrected."""

    current_version: int = 0
    #: call staleness → number of trainable calls (every consumed rollout, kept or not)
    histogram: Counter = field(default_factory=Counter)
    trajectories: int = 0
    stale_trajectories: int = 0
    dropped_trajectories: int = 0  # stale, under stale_policy = drop
    dropped_calls: int = 0
    corrected_trajectories: int = 0  # stale, under stale_policy = correct
    corrected_calls: int = 0
    spanning_trajectories: int = 0  # calls of more than one version (mid-call updates included)
    spanning_dropped: int = 0  # under span_policy = drop
    unversioned_calls: int = 0

    @property
    def needs_correction(self) -> bool:
        """Whether the step must run with importance correction (a stale trajectory was kept)."""
        return self.corrected_trajectories > 0

    def as_metrics(self) -> dict[str, float]:
        known = {k: v for k, v in self.histogram.items() if k != UNKNOWN}
        n = sum(known.values())
        out = {f"staleness_{k}": float(v) for k, v in sorted(self.histogram.items()) if k != UNKNOWN}
        out.update({
            "staleness_mean": sum(k * v for k, v in known.items()) / n if n else 0.0,
            "staleness_max": float(max(known, default=0)),
            "stale_trajectories": float(self.stale_trajectories),
            "stale_dropped_trajectories": float(self.dropped_trajectories),
            "stale_dropped_samples": float(self.dropped_calls),
            "stale_corrected_trajectories": float(self.corrected_trajectories),
            "stale_corrected_samples": float(self.corrected_calls),
            "spanning_trajectories": float(self.spanning_trajectories),
            "spanning_dropped": float(self.spanning_dropped),
            "unversioned_calls": float(self.unversioned_calls),
        })
        return out


def call_versions(call: Any) -> tuple[int | None, int | None]:
    """``(admitted, final)`` policy version of a recorded call (final = admitted unless the
    engine's weights changed while it generated)."""
    rec = RecordedCall.from_any(call)
    first = rec.policy_version
    final = (rec.response or {}).get("policy_version_final") if isinstance(rec.response, dict) else None
    return first, int(final) if isinstance(final, int) and not isinstance(final, bool) else first


def _trainable_calls(calls: Sequence[Any]) -> list[Any]:
    out = []
    for call in calls:
        rec = RecordedCall.from_any(call)
        if rec.status == "ok" and (rec.response is not None or rec.response_token_ids):
            out.append(call)
    return out


def filter_stale(
    items: Iterable[tuple[Any, Sequence[Any]]], current_version: int, policy: StalenessPolicy,
) -> tuple[list[tuple[Any, Sequence[Any]]], StalenessReport]:
    """The ``(rollout, calls)`` pairs a step at ``current_version`` trains on, and a report.

    Rollouts that do not train anyway (``infra_error``, ``timeout``, no calls) pass through
    unchanged: the batch builder drops and counts them as before."""
    report = StalenessReport(current_version=current_version)
    kept: list[tuple[Any, Sequence[Any]]] = []
    for rollout, calls in items:
        status = getattr(rollout, "status", None)
        status = getattr(status, "value", status)
        usable = _trainable_calls(calls)
        if status not in ("ok", "policy_error") or not usable:
            kept.append((rollout, calls))
            continue
        report.trajectories += 1
        versions: set[int] = set()
        stalest = 0
        for call in usable:
            first, final = call_versions(call)
            if first is None:
                report.unversioned_calls += 1
                staleness = UNKNOWN
            else:
                versions.update({first, final if final is not None else first})
                staleness = max(0, current_version - first)
            report.histogram[staleness] += 1
            stalest = max(stalest, staleness)
        spanning = len(versions) > 1
        if spanning:
            report.spanning_trajectories += 1
            if policy.span_policy == "drop":
                report.spanning_dropped += 1
                continue
        if stalest > policy.max_staleness:
            report.stale_trajectories += 1
            if policy.stale_policy == "drop":
                report.dropped_trajectories += 1
                report.dropped_calls += len(usable)
                continue
            report.corrected_trajectories += 1
            report.corrected_calls += len(usable)
        kept.append((rollout, calls))
    return kept, report
