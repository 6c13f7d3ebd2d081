"""The verifier phase: wait for ``tests/test.sh`` (copied in by the backend after
``OPENFORGE_PHASE agent_done``), run it with a timeout, read the reward.

``<logs>/verifier/reward.json`` (``{"reward", "checks"}``) wins over ``reward.txt`` (one
float). A crash, a timeout, or no readable finite reward is a :class:`VerifierError`; a
nonzero exit that still wrote a reward is fine (many Harbor verifiers exit 1 on failure).
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


class VerifierError(RuntimeError):
    """The verifier could not produce a reward (infra_error/verifier_error)."""


@dataclass
class Verdict:
    reward: float
    checks: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None


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
    try:
        reward = float(value)
    except (TypeError, ValueError):
        raise VerifierError(f"{where}: reward {value!r} is not a number") from None
    if not math.isfinite(reward):
        raise VerifierError(f"{where}: reward {value!r} is not finite")
    return reward


def read_reward(verifier_logs: Path) -> Verdict:
    """The reward the verifier wrote (reward.json first, then reward.txt)."""
    as_json = verifier_logs / "reward.json"
    as_text = verifier_logs / "reward.txt"
    if as_json.is_file():
        try:
            doc = json.loads(as_json.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise VerifierError(f"{as_json}: invalid JSON ({exc})") from None
        if isinstance(doc, dict) and "reward" in doc:
            checks = doc.get("checks") if isinstance(doc.get("checks"), dict) else {}
            return Verdict(reward=_parse_reward(doc["reward"], as_json), checks=checks)
        if not as_text.is_file():
            raise VerifierError(f"{as_json}: no 'reward' field")
    if as_text.is_file():
        text = as_text.read_text(encoding="utf-8", errors="replace").strip()
        first = text.split()[0] if text else ""
        return Verdict(reward=_parse_reward(first, as_text))
    raise VerifierError(f"verifier wrote no reward ({as_text} missing)")


async def run_verifier(tests_dir: Path, *, env: dict[str, str], cwd: Path, verifier_logs: Path,
                       timeout: float) -> Verdict:
    """Run ``bash tests/test.sh`` and read its reward."""
    verifier_logs.mkdir(parents=True, exist_ok=True)
    for stale in ("reward.txt", "reward.json"):
        (verifier_logs / stale).unlink(missing_ok=True)
    out = verifier_logs / "test-output.log"
    result = await run_process(["bash", str(tests_dir / "test.sh")], env=env, cwd=cwd, log_path=out,
                               timeout=timeout)
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
