"""A harness stopped by the proxy's spent generation budget is verified, not called a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.records import ErrorKind, Outcome
from environments.runner.classify import classify_exit
from training.proxy.budget import BudgetExhausted, BudgetLedger, GenerationBudget


def _refusal_message() -> str:
    ledger = BudgetLedger(GenerationBudget(max_total_tokens=1), generated=1)
    try:
        ledger.reserve(None)
    except BudgetExhausted as exc:
        return str(exc)
    raise AssertionError("a spent ledger must refuse")


def test_spent_budget_goes_on_to_the_verifier(tmp_path: Path) -> None:
    tail = f'ERROR: unexpected status 400 Bad Request: {{"error": {{"message": "{_refusal_message()}"}}}}\n'
    verdict = classify_exit("codex", 1, False, tail, tmp_path / "none.json")
    assert verdict.proceed


@pytest.mark.parametrize("tail", [
    '{"type":"turn.failed","error":{"message":"Incomplete response returned, reason: max_output_tokens"}}',
    "API Error: Claude's response exceeded the 64 output token maximum.",
])
def test_an_answer_cut_at_the_per_call_cap_goes_on_to_the_verifier(tmp_path: Path, tail: str) -> None:
    assert classify_exit("h", 1, False, tail + "\n", tmp_path / "none.json").proceed


def test_other_nonzero_exits_still_crash(tmp_path: Path) -> None:
    verdict = classify_exit("codex", 1, False, "Segmentation fault\n", tmp_path / "none.json")
    assert (verdict.proceed, verdict.status, verdict.error_kind) == (False, Outcome.infra_error,
                                                                     ErrorKind.harness_crash.value)
