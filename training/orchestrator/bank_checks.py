"""Verify the bank's imported tasks on a real sandbox backend: the bank's
:func:`environments.bank.verify_tasks` (oracle must score 1, no-op 0; DB rows and statuses)
with this room's rollout (:func:`training.orchestrator.single.rollout_once`), so that the
bank (in ``environments``) never imports the orchestrator."""

from __future__ import annotations

import asyncio
from typing import Any

from environments import bank
from openforge.settings import Settings
from training.orchestrator.single import rollout_once


def check_rollout(task_dir: str, harness: str, backend: str) -> dict[str, Any]:
    """One unrecorded rollout of ``harness`` on ``task_dir`` (the bank's ``RolloutFn``)."""
    return asyncio.run(rollout_once(task_dir, harness, backend=backend, record=False))


def verify_tasks(task_ids: list[str] | None = None, *, backend: str = "local",
                 settings: Settings | None = None) -> list[dict[str, Any]]:
    """:func:`environments.bank.verify_tasks` with real rollouts on ``backend``."""
    return bank.verify_tasks(task_ids, rollout=check_rollout, backend=backend, settings=settings)
