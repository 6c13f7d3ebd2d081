"""The verifier phase: wait for ``tests/test.sh`` (copied in by the backend after
``OPENFORGE_PHASE agent_done``), run it with a timeout, read the reward
(``environments.verifiers.reward_files``: reward.json / reward.txt as Harbor reads them).

A crash, a timeout, or no readable finite reward is a :class:`VerifierError`; a nonzero
exit that still wrote a reward is fine (many Harbor verifiers exit 1 on failure).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from environments.procs import run_process, tail
from environments.verifiers.reward_files import (
    CHECKS_FILE,
    Verdict,
    VerifierError,
    read_reward,
)


async def wait_for_tests(tests_dir: Path, timeout: float, poll: float = 0.05) -> float:
    """Wait until ``tests_dir/test.sh`` exists; returns seconds waited."""
    start = time.monotonic()
    script = tests_dir / "test.sh"
    while not script.is_file():
        if time.monotonic() - start > timeout:
            raise VerifierError(f"{script} did not appear within {timeout:.0f}s of agent_done")
        await asyncio.sleep(poll)
    return time.monotonic() - start


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
