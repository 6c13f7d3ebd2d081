"""The module-level rollout function veRL's agent loop imports in every Ray worker.

``rollout(request)`` (import path :data:`~.agent_loop.DEFAULT_ROLLOUT_FN`) runs one OpenForge
rollout for veRL: on first use in a worker process it assembles the rollout service of the
run's preset (:func:`training.workflows.common.rollout_service`: the recording proxy, the
sandbox backend, the harness and *its preset options*, the generation budget, the sandbox
size), with veRL's own vLLM replicas as the proxy's engine (:class:`ReplicaEngine`).

What the driver hands the workers (environment, set by :mod:`.main` through Ray's
``runtime_env``):

- ``OPENFORGE_VERL_PRESET``: the run's ``preset.json`` (a whole preset, overrides applied), or
  a preset name / TOML path with ``OPENFORGE_VERL_OVERRIDES`` (JSON dotted overrides);
- ``OPENFORGE_VERL_TASKS``: JSON file ``{task_id: task_dir}`` (written with the dataset);
- ``OPENFORGE_VERL_RUN_ID``: the run's id (rollout rows and proxy records);
- ``OPENFORGE_VERL_SERVERS`` (optional): comma-separated OpenAI base URLs of the replicas,
  else the addresses the agent loop read from veRL's server manager.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from training.trainers.verl.outputs import RecordedRollout, RolloutRequest, make_rollout_fn

log = logging.getLogger(__name__)


#: Reads the step of the weights one replica serves (``None`` when it cannot tell).
VersionReader = Callable[[], Awaitable[int | None]]


def _served_step(server: Any) -> int | None:
    """Runs inside a veRL rollout-server actor: the step of the weights it serves. veRL's
    servers (vLLM, SGLang, TensorRT-LLM) keep it as ``global_steps``, set by the weight sync
    once the new weights are in (``set_global_steps``), ``None`` before the first sync."""
    return getattr(server, "global_steps", None)


def replica_version_reader(handle: Any) -> VersionReader:
    """A :data:`VersionReader` over the Ray actor ``handle`` of a veRL replica's server.

    veRL's servers have no method that returns the step, so the read runs a function inside
    the actor through Ray's ``__ray_call__``; a failed read (an actor of another kind, a Ray
    without it) gives ``None`` and the call keeps the step's version."""

    async def read() -> int | None:
        try:
            value = await handle.__ray_call__.remote(_served_step)
        except Exception:  # noqa: BLE001 - a version we cannot read is a version we do not record
            log.debug("could not read the served step of %r", handle, exc_info=True)
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return read


def stamp_versions(answer: dict[str, Any], before: int | None, after: int | None) -> dict[str, Any]:
    """``answer`` with the policy version(s) that sampled it: ``policy_version`` the replica's
    step read just before the call, ``policy_version_final`` the step read just after when it
    differs (a weight sync came in between: the call may have run on either, and the
    staleness check treats it as spanning both, as the local engine's mid-call swaps)."""
    admitted = before if before is not None else after
    if admitted is None:
        return answer
    answer["policy_version"] = admitted
    if after is not None and after != admitted:
        answer["policy_version_final"] = after
    return answer


class ReplicaEngine:
    """:class:`~training.engines.base.ChatEngine` over veRL's vLLM replicas (round-robin per call
    over the replicas learnt so far: :meth:`add` as trajectories are assigned new ones).

    veRL syncs the replicas' weights itself. Where a replica's Ray actor is known
    (:meth:`add` with ``versions``), each answer is stamped with the step of the weights that
    served it (:func:`stamp_versions`, read before and after the call), which the proxy
    records as the call's ``policy_version``; without one the agent loop falls back to the
    step's ``global_steps``."""

    def __init__(self, base_urls: list[str], *, model: str | None = None,
                 versions: Mapping[str, VersionReader] | None = None) -> None:
        if not base_urls:
            raise ValueError("ReplicaEngine: no vLLM replica address (OPENFORGE_VERL_SERVERS or veRL's server manager)")
        self.model = model
        self.base_urls: list[str] = []
        self._engines: list[Any] = []
        self._versions: dict[str, VersionReader] = {}
        self._counter = itertools.count()
        self.add(base_urls, versions)

    def add(self, base_urls: list[str], versions: Mapping[str, VersionReader] | None = None) -> None:
        """Learn replica addresses (and, by address, how to read the step each serves)."""
        from training.engines.openai_compat import OpenAICompatEngine  # noqa: PLC0415

        for url in base_urls:
            if url not in self.base_urls:
                self.base_urls.append(url)
                self._engines.append(OpenAICompatEngine(url, model=self.model))
        for url, read in (versions or {}).items():
            self._versions.setdefault(url, read)

    @property
    def policy_version(self) -> int | None:
        return None

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        i = next(self._counter) % len(self._engines)
        read = self._versions.get(self.base_urls[i])
        if read is None:
            return await self._engines[i].chat_completions(body)
        before = await read()
        answer = await self._engines[i].chat_completions(body)
        return stamp_versions(answer, before, await read())

    async def list_models(self) -> list[str]:
        return await self._engines[0].list_models()

    async def aclose(self) -> None:
        for engine in self._engines:
            await engine.aclose()


class WorkerRollouts:
    """One worker process's rollout service (started on first use, kept for the run)."""

    def __init__(self, preset: Any, tasks: dict[str, str], run_id: str, servers: list[str]) -> None:
        self.preset, self.tasks, self.run_id, self.servers = preset, tasks, run_id, servers
        self.service: Any = None
        self.fn: Any = None

    @classmethod
    def from_env(cls, servers: list[str]) -> WorkerRollouts:
        from openforge.presets import Preset, load_preset  # noqa: PLC0415

        preset_name = os.environ.get("OPENFORGE_VERL_PRESET")
        tasks_file = os.environ.get("OPENFORGE_VERL_TASKS")
        if not preset_name or not tasks_file:
            raise RuntimeError("OPENFORGE_VERL_PRESET / OPENFORGE_VERL_TASKS unset: the veRL driver "
                               "(python -m training.trainers.verl.main) sets them for its Ray workers")
        if preset_name.endswith(".json"):
            preset = Preset.model_validate_json(Path(preset_name).read_text())
        else:
            preset = load_preset(preset_name, json.loads(os.environ.get("OPENFORGE_VERL_OVERRIDES") or "{}"))
        env_servers = [a for a in os.environ.get("OPENFORGE_VERL_SERVERS", "").split(",") if a]
        return cls(preset, json.loads(Path(tasks_file).read_text()),
                   os.environ.get("OPENFORGE_VERL_RUN_ID") or "verl", env_servers or servers)

    async def start(self) -> WorkerRollouts:
        from training.trajectory.source import load_rollouts_with_calls  # noqa: PLC0415
        from training.workflows.common import harness_options, rollout_service  # noqa: PLC0415

        engine = ReplicaEngine(self.servers)
        self.service = await rollout_service(self.preset, engine, run_id=self.run_id, refill=False).__aenter__()
        assert self.service.scheduler is not None
        db = self.service.db

        async def fetch_calls(rollout_id: str) -> list[Any]:
            rows = await asyncio.to_thread(load_rollouts_with_calls, db, rollout_ids=[rollout_id])
            return rows[0][1] if rows else []

        def task_dir(task_id: str) -> str:
            if task_id not in self.tasks:
                raise KeyError(f"task {task_id!r} is not in this run's dataset ({len(self.tasks)} tasks)")
            return self.tasks[task_id]

        r = self.preset.rollout
        self.fn = make_rollout_fn(self.service.scheduler.run_one, fetch_calls, task_dir=task_dir, harness=r.harness,
                                  timeout_sec=r.timeout_sec, run_id=self.run_id, harness_options=harness_options(self.preset),
                                  cpus=r.cpus, memory_mb=r.memory_mb)
        return self

    async def aclose(self) -> None:
        if self.service is not None:
            await self.service.__aexit__(None, None, None)
            await self.service.engine.aclose()


_workers: dict[asyncio.AbstractEventLoop, asyncio.Task[WorkerRollouts]] = {}


async def rollout(request: RolloutRequest) -> RecordedRollout:
    """One OpenForge rollout of ``request.task_id`` (see the module doc)."""
    loop = asyncio.get_running_loop()
    starting = _workers.get(loop)
    if starting is None:  # the first rollout of this process (loop) starts the service; the others wait for it
        starting = _workers[loop] = loop.create_task(WorkerRollouts.from_env(list(request.server_addresses)).start())
    worker = await starting
    if request.server_addresses:
        worker.service.engine.add(list(request.server_addresses),
                                  {url: replica_version_reader(h) for url, h in request.server_handles.items()})
    return await worker.fn(request)


async def close_worker() -> None:
    """Stop this loop's rollout service (end of a run, tests)."""
    starting = _workers.pop(asyncio.get_running_loop(), None)
    if starting is not None:
        await (await starting).aclose()
