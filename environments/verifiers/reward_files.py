"""The reward-file contract between a task's verifier and whoever reads its reward (the
runner in the sandbox, synthesis checks, Harbor interop).

``<logs>/verifier/reward.json`` wins over ``reward.txt`` (one float), as in Harbor: every
numeric key of reward.json is a metric (kept per rollout), the reward is its ``reward`` key,
else reward.txt, else its only metric. No readable finite reward is a :class:`VerifierError`.

Our verifiers keep reward.json numeric only, as Harbor requires (``reward`` plus
``check.<name>`` = 1/0 per check), and write the details beside it in ``checks.json``
(``{"reward", "checks": {name: bool}, "error": str | null, ...}``): see :func:`reward_files`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The side file (next to reward.json) with each check's outcome and any error text.
CHECKS_FILE = "checks.json"
#: reward.json key of check ``<name>``: ``check.<name>`` (cannot collide with ``reward``).
CHECK_PREFIX = "check."


class VerifierError(RuntimeError):
    """The verifier could not produce a reward (infra_error/verifier_error)."""


@dataclass
class Verdict:
    reward: float
    checks: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    #: Every numeric key of reward.json (Harbor's rewards dict), ``reward`` included.
    metrics: dict[str, float] = field(default_factory=dict)


def _parse_reward(value: Any, where: Path) -> float:
    if isinstance(value, bool):
        raise VerifierError(f"{where}: reward {value!r} is not a number")
    try:
        reward = float(value)
    except (TypeError, ValueError):
        raise VerifierError(f"{where}: reward {value!r} is not a number") from None
    if not math.isfinite(reward):
        raise VerifierError(f"{where}: reward {value!r} is not finite")
    return reward


def _metrics(doc: dict[str, Any], where: Path) -> dict[str, float]:
    """Every numeric top-level key of reward.json (Harbor's rewards dict); a non-finite one
    is an error. Non-numeric keys (our older ``checks`` / ``error``) are not metrics."""
    out: dict[str, float] = {}
    for key, value in doc.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(float(value)):
                raise VerifierError(f"{where}: {key} = {value!r} is not finite")
            out[str(key)] = float(value)
    return out


def reward_files(reward: float, checks: dict[str, bool], **detail: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """(reward.json, checks.json) documents as our verifiers write them: reward.json is
    ``{"reward": r, "check.<name>": 1 | 0, ...}`` (numeric only, what Harbor accepts) and
    checks.json ``{"reward": r, "checks": {name: bool}, **detail}`` (e.g. ``error``)."""
    flat: dict[str, float] = {"reward": float(reward)}
    flat.update({CHECK_PREFIX + name: int(bool(ok)) for name, ok in checks.items()})
    return flat, {"reward": float(reward), "checks": {name: bool(ok) for name, ok in checks.items()}, **detail}


def read_checks(verifier_logs: Path) -> dict[str, Any]:
    """Each check's outcome: ``checks.json``'s ``checks``, else (tasks written before it) the
    ``checks`` object of reward.json; ``{}`` when neither holds one."""
    for name in (CHECKS_FILE, "reward.json"):
        path = verifier_logs / name
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("checks"), dict):
            return doc["checks"]
    return {}


def _read_text_reward(as_text: Path) -> float:
    text = as_text.read_text(encoding="utf-8", errors="replace").strip()
    first = text.split()[0] if text else ""
    return _parse_reward(first, as_text)


def read_reward(verifier_logs: Path) -> Verdict:
    """The reward the verifier wrote, as Harbor reads it: ``reward.json`` (every numeric key
    a metric; the reward is its ``reward`` key, else ``reward.txt``, else its only metric),
    otherwise ``reward.txt`` (one float). Checks come from :func:`read_checks`."""
    as_json = verifier_logs / "reward.json"
    as_text = verifier_logs / "reward.txt"
    if as_json.is_file():
        try:
            doc = json.loads(as_json.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise VerifierError(f"{as_json}: invalid JSON ({exc})") from None
        if isinstance(doc, (int, float)) and not isinstance(doc, bool):
            reward = _parse_reward(doc, as_json)
            return Verdict(reward=reward, checks=read_checks(verifier_logs), metrics={"reward": reward})
        if not isinstance(doc, dict):
            raise VerifierError(f"{as_json}: expected an object of numeric metrics")
        metrics = _metrics(doc, as_json)
        checks = read_checks(verifier_logs)
        if "reward" in doc:
            return Verdict(reward=_parse_reward(doc["reward"], as_json), checks=checks, metrics=metrics)
        if as_text.is_file():
            return Verdict(reward=_read_text_reward(as_text), checks=checks, metrics=metrics)
        if len(metrics) == 1:
            return Verdict(reward=next(iter(metrics.values())), checks=checks, metrics=metrics)
        raise VerifierError(f"{as_json}: no 'reward' key among metrics {sorted(metrics)} and no reward.txt")
    if as_text.is_file():
        return Verdict(reward=_read_text_reward(as_text), checks=read_checks(verifier_logs))
    raise VerifierError(f"verifier wrote no reward ({as_text} missing)")
