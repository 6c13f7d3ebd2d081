"""The verifier phase: wait for ``tests/test.sh`` (copied in by the backend after
``OPENFORGE_PHASE agent_done``), run it with a timeout, read the reward.

``<logs>/verifier/reward.json`` wins over ``reward.txt`` (one float), as in Harbor: every
numeric key of reward.json is a metric (kept per rollout), the reward is its ``reward`` key,
else reward.txt, else its only metric. A crash, a timeout, or no readable finite reward is a :class:`VerifierError`; a
nonzero exit that still wrote a reward is fine (many Harbor verifiers exit 1 on failure).

Our verifiers keep reward.json numeric only, as Harbor requires (``reward`` plus
``check.<name>`` = 1/0 per check), and write the details beside it in ``checks.json``
(``{"reward", "checks": {name: bool}, "error": str | null, ...}``): see :func:`reward_files`.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.runner.procs import run_process, tail

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


async def wait_for_tests(tests_dir: Path, timeout: float, poll: float = 0.05) -> float:
    """Wait until ``tests_dir/test.sh`` exists; returns seconds waited."""
    start = time.monotonic()
    script = tests_dir / "test.sh"
    while not script.is_file():
        if time.monotonic() - start > timeout:
            raise VerifierError(f"{script} did not appear within {timeout:.0f}s of agent_done")
        await asyncio.sleep(poll)
    return time.monotonic() - start


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


async def run_verifier(tests_dir: Path, *, env: dict[str, str], cwd: Path, verifier_logs: Path,
                       timeout: float, user: int | None = None, group: int | None = None) -> Verdict:
    """Run ``bash tests/test.sh`` (as ``user``:``group`` when given) and read its reward."""
    verifier_logs.mkdir(parents=True, exist_ok=True)
    for stale in ("reward.txt", "reward.json", CHECKS_FILE):
        (verifier_logs / stale).unlink(missing_ok=True)
    out = verifier_logs / "test-output.log"
    result = await run_process(["bash", str(tests_dir / "test.sh")], env=env, cwd=cwd, log_path=out,
                               timeout=timeout, user=user, group=group)
    if result.timed_out:
        raise VerifierError(f"tests/test.sh timed out after {timeout:.0f}s")
    try:
        verdict = read_reward(verifier_logs)
    except VerifierError as exc:
        last = tail(out, 400).strip().splitlines()
        raise VerifierError(f"{exc}; tests/test.sh exited {result.returncode}"
                            + (f": {last[-1]}" if last else "")) from None
    verdict.returncode = result.returncode
    return verdict
