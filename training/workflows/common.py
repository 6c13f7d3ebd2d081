"""Small pieces the workflows share: task selection, engines from presets, the trainer thread,
outcome counts."""

from __future__ import annotations

import concurrent.futures
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from environments.records import RolloutResult
from environments.taskdir import TaskDir, load_task
from openforge.aio import in_thread_to_the_end
from openforge.presets import Preset, TrainConfig
from training.trajectory import prepare_grpo_batch
from training.trajectory.batch import BatchReport
from training.trajectory.records import Sample
from training.workflows.compose import (
    CompositionError,
    Workflow,
    compose,
    vllm_launch_config,
)

__all__ = ["CompositionError", "grpo_batch", "harness_options", "in_thread", "local_engine", "policy_engine", "rollout_service"]

T = TypeVar("T")


#: The one thread that runs a process's blocking training work (batch building, optimiser
#: steps, weight pushes). One thread, not asyncio's pool: torch's per-thread settings hold from
#: step to step, and a step's activations reuse one malloc arena. Steps spread over the pool's
#: threads each kept a multi-GB arena of their own: the main job grew to 24 GB and was killed.
_TRAINER_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="openforge-trainer")


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the trainer thread; if the caller is cancelled (once or over
    and over), the work is waited for (a thread cannot be stopped) so nothing of the run keeps
    going after it."""
    return await in_thread_to_the_end(fn, *args, executor=_TRAINER_THREAD, **kwargs)


def grpo_batch(items: Sequence[tuple[Any, Sequence[Any]]], cfg: TrainConfig, tokenizer: Any
               ) -> tuple[list[Sample], BatchReport]:
    """The GRPO batch of recorded ``(rollout, calls)`` pairs as ``[train]`` asks for it: the one
    place the sync and async loops map preset keys onto :func:`prepare_grpo_batch` (prefix
    merging on: it is exact where it applies). Blocking: call it off the event loop."""
    return prepare_grpo_batch(
        items, gamma=cfg.gamma, eps=cfg.adv_eps, norm_by_std=cfg.norm_adv_by_std,
        drop_zero_variance=cfg.drop_zero_variance_groups, merge=True, tokenizer=tokenizer,
        mask_cut_replies=cfg.mask_cut_replies,
    )


def load_tasks(dirs: Sequence[str | Path]) -> list[TaskDir]:
    return [load_task(d) for d in dirs]


def local_engine(preset: Preset, model_path: str | Path | None, *, alternates_with_trainer: bool = False) -> Any:
    """The in-process policy engine for ``model_path`` (else ``engine.model_path``, else the
    default model). ``engine.kind`` must be ``local``; other kinds: :func:`policy_engine`.

    On CPU, ``engine.threads`` if set; else an engine that runs beside other work (an
    evaluation beside SFT or another evaluation, asynchronous RL) decodes on half the cores,
    and one that ``alternates_with_trainer`` (synchronous RL: rollouts, then the step, then
    the next rollouts) on every core, which the trainer then takes while the engine waits.
    """
    if preset.engine.kind != "local":
        raise CompositionError(
            f"preset {preset.name!r}: engine.kind = {preset.engine.kind!r} is not the in-process engine; "
            "use --set engine.kind=local")
    import torch  # noqa: PLC0415

    if preset.engine.device.startswith("cuda") and not torch.cuda.is_available():
        raise CompositionError(f"preset {preset.name!r}: engine.device = {preset.engine.device!r} but torch "
                               f"{torch.__version__} sees no CUDA device here; use --set engine.device=cpu")
    from training.cpu import available_cores  # noqa: PLC0415
    from training.engines.local import LocalEngine  # noqa: PLC0415 - loads torch
    from training.engines.local.engine import default_cpu_threads  # noqa: PLC0415
    from training.precision import resolve_dtype  # noqa: PLC0415

    path = model_path or preset.engine.model_path
    return LocalEngine(
        str(path) if path else None,
        device=preset.engine.device,
        dtype=getattr(torch, resolve_dtype(preset.engine.dtype, preset.engine.device)),
        max_batch_size=preset.engine.max_batch,
        seed=preset.train.seed,
        context_length=preset.engine.context_length,
        threads=(preset.engine.threads or (available_cores() if alternates_with_trainer else default_cpu_threads()))
        if preset.engine.device == "cpu" else None,
    )


async def policy_engine(preset: Preset, model_path: str | Path | None, workflow: Workflow, *,
                        log_dir: str | Path | None = None) -> Any:
    """The engine ``preset`` composes to for ``workflow`` (:func:`compose`), started: the
    in-process engine, a launched (or attached) vLLM server, or a fixed OpenAI-compatible URL.
    Fails in one line (:class:`CompositionError`) before loading anything when the preset asks
    for what this machine cannot run."""
    composition = compose(preset, workflow, model_path)
    composition.require_runnable()
    kind = composition.engine.kind
    if kind == "local":
        return local_engine(preset, model_path)
    if kind == "url":
        from training.engines.openai_compat import OpenAICompatEngine  # noqa: PLC0415

        return OpenAICompatEngine(str(preset.engine.url))
    return await vllm_engine(preset, model_path, log_dir=log_dir)


async def vllm_engine(preset: Preset, model_path: str | Path | None, *, log_dir: str | Path | None = None) -> Any:
    """A started :class:`~training.engines.vllm.VLLMServer`: attached to ``engine.url`` or launched
    on ``model_path`` (else ``engine.model_path``, else the default model) with the preset's
    ``[engine]`` settings (token ids, logprobs and the tool parser on)."""
    from training.engines.vllm import VLLMServer  # noqa: PLC0415

    if preset.engine.url:
        return await VLLMServer.attach(preset.engine.url).start()
    from training.engines.model_store import resolve_model  # noqa: PLC0415

    log_path = Path(log_dir) / "vllm.log" if log_dir else None
    server = VLLMServer(vllm_launch_config(preset, resolve_model(str(model_path) if model_path else preset.engine.model_path),
                                           log_path=log_path))
    try:
        return await server.start()
    except BaseException:
        await server.aclose()
        raise


def rollout_service(preset: Preset, engine: Any, *, run_id: str, harness: str | None = None,
                    model: str = "policy", refill: bool = True) -> Any:
    """The one place a run's rollout machinery is assembled from its preset: ``engine``
    behind the recording proxy, the sandbox backend, the scheduler (concurrency, refills,
    timeout), the harness and its options, the generation budget and the sandbox size."""
    from training.workflows.service import RolloutService  # noqa: PLC0415 - starts the proxy on enter

    r = preset.rollout
    return RolloutService(
        engine, backend=r.backend, harness=harness or r.harness, concurrency=r.concurrency,
        refill=r.max_refills if (refill and r.refill) else 0, timeout_sec=r.timeout_sec,
        harness_options=harness_options(preset), run_id=run_id, model=model, cpus=r.cpus, memory_mb=r.memory_mb,
    )


def harness_options(preset: Preset) -> dict[str, Any]:
    """Adapter options from the preset; they carry its generation budget, which
    :class:`training.workflows.service.RolloutService` also applies at the proxy."""
    options = dict(preset.harness_options)
    options.setdefault("max_tokens", preset.rollout.max_tokens)
    if preset.rollout.max_total_tokens is not None:
        options.setdefault("max_total_tokens", preset.rollout.max_total_tokens)
    options.setdefault("temperature", preset.rollout.temperature)
    if preset.rollout.top_p < 1.0:
        options.setdefault("top_p", preset.rollout.top_p)
    return options


def outcome_counts(results: Sequence[RolloutResult]) -> dict[str, int]:
    counts = Counter(r.status.value for r in results)
    counts.update(f"{r.status.value}/{r.error_kind}" for r in results if r.error_kind)
    return dict(counts)


def mean_reward(results: Sequence[RolloutResult]) -> float:
    usable = [r.reward or 0.0 for r in results if r.trainable]
    return sum(usable) / len(usable) if usable else 0.0
