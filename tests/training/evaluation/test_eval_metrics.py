"""Verifier metrics in the evaluation (training/workflows/evaluate.py): each harness's
``HarnessEval.metrics`` is the mean of every reward.json metric over its scored rollouts, and
the evaluation table shows them (``reward`` left to the ``mean_reward`` column)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from environments.records import Outcome, RolloutResult
from environments.taskdir import TaskConfig, TaskSection, write_task
from training.workflows import evaluate as ev


def _result(i: int, harness: str, status: Outcome, reward: float | None, metrics: dict[str, float]) -> RolloutResult:
    return RolloutResult(rollout_id=f"{harness}-{i}", task_id="t1", harness=harness, backend="local", status=status,
                         reward=reward, metrics=metrics)


def test_metric_means_over_scored_rollouts_that_report_each() -> None:
    results = [
        _result(0, "react", Outcome.ok, 1.0, {"reward": 1.0, "check.sent": 1, "check.cc": 1}),
        _result(1, "react", Outcome.ok, 0.0, {"reward": 0.0, "check.sent": 0}),
        _result(2, "react", Outcome.policy_error, 0.0, {"reward": 0.0, "check.sent": 1, "check.cc": 0}),
        _result(3, "react", Outcome.infra_error, None, {"reward": 1.0, "check.sent": 1}),  # not scored: left out
    ]
    assert ev.metric_means(results) == {"check.cc": 0.5, "check.sent": pytest.approx(2 / 3), "reward": pytest.approx(1 / 3)}
    assert ev.metric_means([]) == {}


class _Service:
    def __init__(self, harness: str) -> None:
        self.harness = harness

    async def run_groups(self, tasks: Sequence[Any], n: int, **_: Any) -> list[RolloutResult]:
        if self.harness == "react":
            return [_result(0, "react", Outcome.ok, 1.0, {"reward": 1.0, "check.a": 1, "accuracy": 0.75}),
                    _result(1, "react", Outcome.ok, 0.0, {"reward": 0.0, "check.a": 0, "accuracy": 0.25})]
        return [_result(0, self.harness, Outcome.ok, 0.5, {"reward": 0.5})]

    def calls_of(self, results: Sequence[RolloutResult]) -> dict[str, list]:
        return {}


class _Engine:
    async def aclose(self) -> None:
        return None


def test_evaluate_reports_and_shows_metric_means_per_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = write_task(tmp_path / "t1", TaskConfig(task=TaskSection(name="t1", description="d")), "Do it.", {
        "environment/Dockerfile": "FROM debian:bookworm-slim\n",
        "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"})

    async def engine(*_: Any) -> _Engine:
        return _Engine()

    @asynccontextmanager
    async def service(_preset: Any, _engine: Any, *, harness: str, **_: Any) -> AsyncIterator[_Service]:
        yield _Service(harness)

    monkeypatch.setattr(ev, "policy_engine", engine)
    monkeypatch.setattr(ev, "rollout_service", service)
    report = asyncio.run(ev.evaluate(object(), [task], harnesses=("react", "codex"), n=2))  # type: ignore[arg-type]
    by = {h.harness: h for h in report.harnesses}
    assert by["react"].metrics == {"accuracy": 0.5, "check.a": 0.5, "reward": 0.5}
    assert by["codex"].metrics == {"reward": 0.5}
    rows = {r["harness"]: r for r in ev.summary_rows([report])}
    assert rows["react"]["metrics"] == {"accuracy": 0.5, "check.a": 0.5} and rows["react"]["mean_reward"] == 0.5
    assert rows["codex"]["metrics"] == {}
    again = ev.EvalReport.model_validate_json(report.model_dump_json())
    assert {h.harness: h.metrics for h in again.harnesses} == {h.harness: h.metrics for h in report.harnesses}
