"""Checks of a flow's inputs that need neither Prefect nor a model: each flow runs its check
first, and the CLI runs the same check before it starts Prefect, so a bad input (a preset, an
override, a harness, a pool, an empty bank) is refused in one line naming it
(``cli/errors.py``) before anything runs. Each raises the owning room's user error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.params import RolloutParams, SynthesizeParams, TasksImportParams


class FlowInputError(ValueError):
    """A flow parameter that cannot work (the message names it and what to do)."""


class NoVerifiedTasks(FlowInputError):
    """The bank holds no verified task the flow could use (the message says how to make some)."""


def check_preset(preset: str, overrides: dict[str, Any] | None = None) -> None:
    """The preset loads with its overrides (``openforge.presets.PresetError`` names the key)."""
    from openforge.presets import load_preset

    load_preset(preset, overrides)


def check_harnesses(names: list[str]) -> None:
    """Every harness is registered (``UnknownHarness`` lists the known ones)."""
    from environments.harnesses.registry import get_harness

    for name in names:
        get_harness(name)


def check_synthesis(params: SynthesizeParams) -> None:
    """The pool of the domain (or the user's) exists, the test harness is known, the agent
    runtime of the backend can be made: before a run row or a model exists."""
    from synthesis.pools import load_pool, packaged_pool
    from synthesis.runtime.factory import make_runtime

    load_pool(params.pool, domain=params.domain) if params.pool else packaged_pool(params.domain)
    if params.k_rollouts:
        check_harnesses([params.test_harness])
    try:
        make_runtime(params.backend, model=params.model, base_url=params.base_url)
    except (ValueError, ImportError) as exc:
        raise FlowInputError(f"synthesize --backend {params.backend}: {exc}") from exc


def no_tasks(what: str, domain: str | None, purpose: str | None) -> NoVerifiedTasks:
    return NoVerifiedTasks(f"{what}: no verified tasks with domain={domain!r} purpose={purpose!r} in the bank "
                           f"(run `openforge synthesize --domain {domain or 'claw'} --purpose {purpose or 'rl'}` first)")


def check_bank(what: str, domain: str | None, purpose: str | None) -> None:
    """The bank holds at least one verified task of ``domain`` / ``purpose``."""
    from environments.bank import list_tasks

    if not any(purpose is None or r["purpose"] == purpose for r in list_tasks(status="verified", domain=domain)):
        raise no_tasks(what, domain, purpose)


def check_task_db(what: str, *, migrated: bool = False) -> None:
    """``OPENFORGE_DB`` parses and its server answers (``DatabaseURLError`` / the driver's
    ``OperationalError``, each one line); with ``migrated``, it holds the tables already (a
    command that reads without migrating, e.g. ``export-atif``)."""
    from openforge.settings import get_settings
    from storage.db import hide_password, make_engine
    from storage.migrate import current_revision

    url = get_settings().db_url
    engine = make_engine(url)
    try:
        revision = current_revision(engine)
    finally:
        engine.dispose()
    if migrated and revision is None:
        raise FlowInputError(f"{what}: task DB {hide_password(url)!r} has no tables yet: run `openforge init` "
                             "(or set OPENFORGE_HOME / OPENFORGE_DB to the data dir you meant)")


def check_import(params: TasksImportParams) -> None:
    """Every path to import exists (a missing one is refused before anything is copied)."""
    for path in params.paths:
        if not Path(path).exists():
            raise FlowInputError(f"tasks import: {path}: does not exist")


def check_rollout(params: RolloutParams) -> None:
    """The harness is registered, the preset loads and the task dir loads (``TaskDirError``
    lists its problems)."""
    from environments.taskdir import load_task

    check_harnesses([params.harness])
    check_preset(params.preset)
    load_task(params.task_dir)
