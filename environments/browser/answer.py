"""Where a browser-use rollout's ``answer`` action text goes: ``<logs>/agent/answer.txt``
(written by the harness and by the oracle replay; read by the task's verifier)."""

from __future__ import annotations

import os
from pathlib import Path

ANSWER_FILE = "answer.txt"


def answer_path(agent_logs: Path) -> Path:
    return Path(agent_logs) / ANSWER_FILE


def write_answer(agent_logs: Path, text: str) -> Path:
    """Write (replace) the answer; atomic so a verifier never reads half of it."""
    path = answer_path(agent_logs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
