"""``OpenForgeAgentLoop``: veRL's agent-loop hook that runs each trajectory as an OpenForge rollout.

veRL calls :meth:`OpenForgeAgentLoop.run` once per (task, sample) of a training step. The
loop builds a :class:`~.outputs.RolloutRequest` (task id from the dataset row's
``extra_info.task_id``, the group's ``uid``, sampling params, ``global_steps``, the
addresses of veRL's vLLM replicas) and awaits the *rollout function* — OpenForge's rollout
service (:mod:`.rollout`), which starts the harness in a sandbox against the proxy (whose
engine is veRL's replicas) and returns a :class:`~.outputs.RecordedRollout` (outcome +
recorded calls). The calls become a *list* of outputs, one per merged segment
(:func:`~.outputs.output_list`): every call is trained; a dropped rollout returns none.

The rollout function is given as a callable or an import path ``"pkg.module:attr"``
(``rollout_fn`` in the agent-loop YAML that :func:`write_agent_loop_config` writes, or
``OPENFORGE_VERL_ROLLOUT_FN``): veRL instantiates agent loops inside Ray workers, so an
import path of a module-level function is what crosses the process boundary
(default :data:`DEFAULT_ROLLOUT_FN`).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from training.trainers.verl.config import AGENT_LOOP_NAME
from training.trainers.verl.outputs import RecordedRollout, RolloutRequest, final_versions, output_list
from training.trajectory.build import RolloutInfo, build_trajectory

log = logging.getLogger(__name__)

RolloutFn = Callable[[RolloutRequest], Awaitable[RecordedRollout]]
DEFAULT_ROLLOUT_FN = "training.trainers.verl.rollout:rollout"


def resolve_rollout_fn(spec: str | RolloutFn | None) -> RolloutFn:
    """A callable from a callable, an ``"pkg.module:attr"`` path, or ``OPENFORGE_VERL_ROLLOUT_FN``."""
    spec = spec or os.environ.get("OPENFORGE_VERL_ROLLOUT_FN")
    if spec is None:
        raise ValueError("OpenForgeAgentLoop needs rollout_fn (callable or 'pkg.module:attr') or OPENFORGE_VERL_ROLLOUT_FN")
    if callable(spec):
        return spec
    module, _, attr = str(spec).partition(":")
    if not attr:
        raise ValueError(f"rollout_fn {spec!r}: expected 'pkg.module:attr'")
    return getattr(importlib.import_module(module), attr)


def _plain(value: Any) -> Any:
    """numpy scalars / object arrays from veRL's non-tensor batch → plain Python."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


@register(AGENT_LOOP_NAME)
class OpenForgeAgentLoop(AgentLoopBase):
    """One OpenForge rollout per veRL trajectory (see module doc)."""

    def __init__(self, *args: Any, rollout_fn: str | RolloutFn | None = None, gamma: float = 1.0, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rollout_fn = resolve_rollout_fn(rollout_fn)
        self.gamma = gamma
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def _servers(self, request_id: str) -> tuple[list[str], dict[str, Any]]:
        """``(addresses, handles)``: OpenAI base URLs of veRL's replicas and, by address, their
        server actors. ``OPENFORGE_VERL_SERVERS`` (set by the driver or the user; no handles),
        else the replica veRL's load balancer assigns this trajectory (its server id is the
        replica's address, with its actor handle; acquired and released at once, to learn it)."""
        env = os.environ.get("OPENFORGE_VERL_SERVERS")
        if env:
            return [a for a in env.split(",") if a], {}
        acquire = getattr(self.server_manager, "_acquire_server", None)
        if acquire is None:
            return [], {}
        server_id, handle = await acquire(request_id)
        release = getattr(self.server_manager, "_release_server", None)
        if release is not None:
            release(server_id, request_id)
        address = str(server_id)
        address = address if address.startswith("http") else f"http://{address}/v1"
        return [address], ({address: handle} if handle is not None else {})

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        extra_info = dict(_plain(kwargs.get("extra_info")) or {})
        steps = _plain(kwargs.get("global_steps"))
        request = RolloutRequest(
            task_id=extra_info.get("task_id") or _plain(kwargs.get("task_id")),
            group_id=_plain(kwargs.get("uid")),
            messages=list(_plain(kwargs.get("raw_prompt")) or []),
            sampling_params=dict(sampling_params),
            extra_info=extra_info,
            sample_index=_plain(kwargs.get("index")),
            validate=bool(kwargs.get("validate", False)),
            global_steps=int(steps) if steps is not None else None,
        )
        request.server_addresses, request.server_handles = await self._servers(
            f"openforge-{request.group_id}-{request.sample_index}")
        started = time.perf_counter()
        recorded = self.rollout_fn(request)
        if inspect.isawaitable(recorded):
            recorded = await recorded
        info = RolloutInfo.from_any(recorded.result)
        trajectory = build_trajectory(info, recorded.calls, gamma=self.gamma, tokenizer=self.tokenizer)
        fields, counts = output_list(trajectory, prompt_length=self.prompt_length,
                                     response_length=self.response_length, global_steps=request.global_steps,
                                     final_versions=final_versions(recorded.calls))
        seconds = time.perf_counter() - started
        if not fields:
            log.info("rollout of task %s: %s, no trainable output (left out of its group)", request.task_id, info.status)
        return [AgentLoopOutput(metrics=AgentLoopMetrics(generate_sequences=seconds),
                                **{**f, "extra_fields": {**f["extra_fields"], "openforge_rollout_seconds": seconds,
                                                         "openforge_overlong_dropped": counts["overlong_dropped"]}})
                for f in fields]


def write_agent_loop_config(path: str | Path, *, rollout_fn: str = DEFAULT_ROLLOUT_FN, gamma: float = 1.0) -> Path:
    """Write the YAML veRL reads from ``rollout.agent.agent_loop_config_path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = f"{OpenForgeAgentLoop.__module__}.{OpenForgeAgentLoop.__qualname__}"
    path.write_text(
        f"- name: {AGENT_LOOP_NAME}\n  _target_: {target}\n  rollout_fn: {rollout_fn!r}\n  gamma: {gamma}\n"
    )
    return path
