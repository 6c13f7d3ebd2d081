"""Reward files as Harbor reads them (environments/runner/verifier.py): reward.json first,
every numeric key a metric; the reward is its ``reward`` key, else reward.txt, else its only
metric; checks from the ``checks.json`` side file our verifiers write, else from our older
``{"reward", "checks"}`` reward.json documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.verifiers.reward_files import (
    CHECKS_FILE,
    VerifierError,
    read_reward,
    reward_files,
)


def _write(tmp_path: Path, doc: object | None = None, text: str | None = None) -> Path:
    if doc is not None:
        (tmp_path / "reward.json").write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    if text is not None:
        (tmp_path / "reward.txt").write_text(text)
    return tmp_path


def test_metrics_without_reward_fall_back_to_reward_txt(tmp_path: Path) -> None:
    v = read_reward(_write(tmp_path, {"exists": 1, "content": 0.5}, "0.25\n"))
    assert v.reward == 0.25 and v.metrics == {"exists": 1.0, "content": 0.5}


def test_reward_key_wins_and_is_a_metric(tmp_path: Path) -> None:
    v = read_reward(_write(tmp_path, {"reward": 1, "accuracy": 0.9}, "0\n"))
    assert v.reward == 1.0 and v.metrics == {"reward": 1.0, "accuracy": 0.9}


def test_a_single_metric_is_the_reward(tmp_path: Path) -> None:
    v = read_reward(_write(tmp_path, {"score": 0.75}))
    assert v.reward == 0.75 and v.metrics == {"score": 0.75}


def test_our_older_documents_keep_their_checks(tmp_path: Path) -> None:
    v = read_reward(_write(tmp_path, {"reward": 0.0, "checks": {"a": True, "b": False}, "error": None}))
    assert v.reward == 0.0 and v.checks == {"a": True, "b": False} and v.metrics == {"reward": 0.0}


def test_several_metrics_and_nothing_else_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VerifierError, match=r"no 'reward' key among metrics \['a', 'b'\] and no reward.txt"):
        read_reward(_write(tmp_path, {"a": 1, "b": 0}))


def test_non_finite_metric_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(VerifierError, match="x = inf is not finite"):
        read_reward(_write(tmp_path, '{"reward": 1, "x": Infinity}'))


def test_reward_txt_alone(tmp_path: Path) -> None:
    v = read_reward(_write(tmp_path, None, "1\n"))
    assert v.reward == 1.0 and v.metrics == {}


def test_our_reward_files_are_numeric_with_checks_beside(tmp_path: Path) -> None:
    flat, detail = reward_files(0.0, {"sent": True, "reward": False}, error="URLError: down")
    assert flat == {"reward": 0.0, "check.sent": 1, "check.reward": 0}  # a check named 'reward' cannot collide
    assert detail == {"reward": 0.0, "checks": {"sent": True, "reward": False}, "error": "URLError: down"}
    _write(tmp_path, flat)
    (tmp_path / CHECKS_FILE).write_text(json.dumps(detail))
    v = read_reward(tmp_path)
    assert v.reward == 0.0 and v.checks == {"sent": True, "reward": False}
    assert v.metrics == {"reward": 0.0, "check.sent": 1.0, "check.reward": 0.0}


def test_side_file_checks_with_reward_txt_only(tmp_path: Path) -> None:
    _write(tmp_path, None, "1\n")
    (tmp_path / CHECKS_FILE).write_text(json.dumps({"reward": 1.0, "checks": {"a": True}}))
    assert read_reward(tmp_path).checks == {"a": True}


def test_a_broken_side_file_leaves_the_reward(tmp_path: Path) -> None:
    _write(tmp_path, {"reward": 1, "checks": {"old": True}})
    (tmp_path / CHECKS_FILE).write_text("{not json")
    v = read_reward(tmp_path)
    assert v.reward == 1.0 and v.checks == {"old": True}
