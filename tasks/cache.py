"""Content-keyed Prefect caching of the pipeline's stages: the mechanics (docs/resume.md).

:class:`StageInputs` is a Prefect cache policy whose key is the sha256 of what a stage's result
depends on, by content (what that is, per stage: :mod:`tasks.stage_keys`). Results are
persisted as JSON by Prefect itself, under ``<runs dir>/results/<stage>-<sha256>`` when the
flow runs the task through :func:`in_data_dir`; a cached result whose output files are gone is
dropped before the look-up (:func:`drop_stale`), so the stage runs again instead of handing on
paths that no longer exist. :func:`refreshing` sets Prefect's ``tasks.refresh_cache`` for a
run (every stage runs and overwrites its record); :func:`note_reuse` and :func:`noting_reuse`
tell the flow which stages came from the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Task, get_run_logger
from prefect.cache_policies import CachePolicy
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.filesystems import LocalFileSystem
from prefect.results import ResultStore
from prefect.settings import PREFECT_TASKS_REFRESH_CACHE, temporary_settings
from prefect.states import State

from openforge.settings import get_settings

log = logging.getLogger(__name__)

#: Bump when a stage's result changes meaning for the same inputs (a new report field that
#: callers need, a different filter): every earlier record stops matching. The git commit is
#: deliberately not in the key: an unrelated commit must not throw away hours of paid rollouts.
KEY_VERSION = 1

def results_dir() -> Path:
    """Where the stages' results are persisted: under the data dir, beside the outputs they name."""
    return get_settings().runs_dir / "results"


def in_data_dir(task: Task, timeout_s: float | None = None) -> Task:
    """``task`` persisting its results in :func:`results_dir`, bounded by ``timeout_s``
    (:mod:`tasks.budgets`; ``None``: the task's own)."""
    return task.with_options(result_storage=results_dir(), timeout_seconds=timeout_s)


def stage_key(stage: str, identity: dict[str, Any]) -> str:
    """``<stage>-<sha256 of the identity>``: a file name in :func:`results_dir`."""
    doc = json.dumps({"version": KEY_VERSION, "stage": stage, "data_dir": str(get_settings().home_dir), **identity},
                     sort_keys=True, default=str)
    return f"{stage}-{hashlib.sha256(doc.encode()).hexdigest()}"


@dataclass
class StageInputs(CachePolicy):
    """Prefect cache policy: the key is :func:`stage_key` of ``identity(inputs)`` (``None``:
    this call is not cached). ``outputs(result)`` names the files a cached result hands on;
    a record whose files are gone, or that no longer reads, is removed before the look-up."""

    stage: str = ""
    identity: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    outputs: Callable[[Any], list[str]] | None = None

    def compute_key(self, task_ctx: TaskRunContext, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        identity = self.identity(inputs) if self.identity else None
        if identity is None:
            return None
        key = stage_key(self.stage, identity)
        if self.outputs is not None:
            drop_stale(task_ctx.result_store, key, self.outputs)
        return key


def drop_stale(store: ResultStore, key: str, outputs: Callable[[Any], list[str]]) -> bool:
    """Remove the record at ``key`` if it does not read back or names a missing file."""
    storage = store.result_storage
    if not isinstance(storage, LocalFileSystem) or not store.exists(key):
        return False
    try:
        missing = [p for p in outputs(store.read(key).result) if not Path(p).exists()]
        reason = f"its outputs are gone: {', '.join(missing)}" if missing else ""
    except Exception as exc:  # noqa: BLE001 - an unreadable record is as good as none
        reason = f"it does not read back ({type(exc).__name__}: {exc})"
    if not reason:
        return False
    log.warning("cached result %s dropped, the stage runs again: %s", key, reason)
    (Path(storage.basepath).expanduser() / key).unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def refreshing(fresh: bool) -> Iterator[None]:
    """Inside, every task runs and overwrites its cached record (Prefect's ``tasks.refresh_cache``)."""
    if not fresh:
        yield
        return
    with temporary_settings(updates={PREFECT_TASKS_REFRESH_CACHE: True}):
        yield


_REUSED: ContextVar[list[str] | None] = ContextVar("openforge_reused_stages", default=None)


@contextlib.contextmanager
def noting_reuse() -> Iterator[list[str]]:
    """Inside, the labels of stages served from the cache are appended to the yielded list."""
    stages: list[str] = []
    token = _REUSED.set(stages)
    try:
        yield stages
    finally:
        _REUSED.reset(token)


def note_reuse(task: Task, task_run: TaskRun, state: State) -> None:
    """Prefect ``on_completion`` hook: log a stage whose result came from the cache (state
    ``Cached``) and note it for :func:`noting_reuse`."""
    if state.name != "Cached":
        return
    ctx = TaskRunContext.get()
    params = ctx.parameters if ctx and ctx.parameters else {}
    label = " ".join(str(p) for p in (task.name, params.get("label") or params.get("purpose")) if p)
    get_run_logger().info("%s: reused the result of an earlier run with the same inputs", label)
    stages = _REUSED.get()
    if stages is not None:
        stages.append(label)
