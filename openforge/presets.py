"""Named training presets: typed ``[train]``, ``[rollout]``, ``[engine]`` and ``[sft]`` sections.

A preset is a TOML file shipped as package data under ``openforge/configs/`` (``local``,
``claw``, ``computer-use``, ``browser-use``; found by an editable or a non-editable install
alike) or any path to a TOML file. :func:`load_preset` reads it, applies
overrides (dotted keys such as ``{"train.lr": 1e-5}`` or nested dicts) and validates it
into a :class:`Preset`. Every section and key is typed and read by some room; an unknown
section or key fails at load with the file and the dotted key named (``[harness_options]``
is the one free-form table: it goes to the harness adapter, which checks its own keys).
"""

from __future__ import annotations

import copy
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

#: Folder holding the named presets: the ``openforge`` package's data folder ``configs/``
#: (``[tool.setuptools.package-data]`` puts it in the wheel; a regular install unpacks it).
CONFIGS_DIR = Path(str(resources.files("openforge") / "configs"))


class PresetError(ValueError):
    """A preset could not be found, parsed or validated (the message names the file/field)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TrainConfig(_Section):
    """Optimiser and loss settings shared by the local and veRL trainers."""

    algorithm: Literal["grpo", "sft"] = "grpo"
    trainer: Literal["local", "verl"] | None = Field(
        None, description="local: the single-device torch trainer; verl: veRL's GRPO (FSDP actor, its own vLLM "
        "replicas). None: verl for engine.kind = 'vllm' on cuda, else local (see effective_trainer).")
    nnodes: int = Field(1, ge=1, description="veRL only: nodes of the training job.")
    n_gpus_per_node: int | None = Field(None, ge=1, description="veRL only: GPUs per node (None: every GPU of the node).")
    rollout_gpus_per_node: int | None = Field(
        None, ge=1, description="veRL with async_rollouts only: how many of each node's GPUs serve the rollout "
        "replicas of veRL's fully asynchronous trainer; the rest train (None: half, at least one each).")
    lr: float = Field(1e-6, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    adam_betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(0, ge=0)
    # Batch sizes: task groups per RL step, samples per forward pass.
    train_batch_size: int = Field(8, ge=1, description="Task groups (prompts) per optimiser step.")
    micro_batch_size: int = Field(4, ge=1, description="Sequences per forward/backward pass; packed (the local "
                                  "trainer without gradient checkpointing), as many sequences as fit in this many "
                                  "rows of the longest of them.")
    ppo_epochs: int = Field(1, ge=1, description="Passes over one step's samples.")
    ppo_mini_batch_size: int | None = Field(
        None, ge=1, description="Task groups per optimiser update (veRL's ppo_mini_batch_size): each PPO epoch "
        "splits the step's groups into mini-batches of this many and updates after each, so a step makes "
        "ppo_epochs x ceil(train_batch_size / ppo_mini_batch_size) updates from one set of rollouts. None, or "
        "more than train_batch_size: the whole step (one update per epoch).")
    group_size: int = Field(8, ge=1, description="G: rollouts per task in a GRPO group.")
    gamma: float = Field(1.0, gt=0, le=1, description="Discount: r_t = gamma^(T-t) * r_T.")
    adv_eps: float = Field(1e-6, gt=0, description="epsilon in (R - mean) / (std + epsilon).")
    norm_adv_by_std: bool = True
    clip_eps_low: float = Field(0.2, ge=0)
    clip_eps_high: float = Field(0.28, ge=0)
    dual_clip_c: float | None = Field(3.0, gt=1, description="Dual-clip bound for A<0; None disables.")
    kl_coef: float = Field(0.0, ge=0, description="beta of the k3 KL to the frozen reference.")
    entropy_coef: float = Field(0.0, ge=0, description="c_H: loss -= c_H * entropy of the sampling distribution.")
    importance_correction: Literal["auto", "on", "off"] = Field(
        "auto", description="Truncated importance sampling vs the engine's logprobs; auto: on unless the engine is in-process.")
    tis_cap: float = Field(2.0, gt=0, description="Cap C of the truncated IS weight min(pi_trainer / pi_engine, C).")
    loss_norm: Literal["per_rollout", "per_token"] = Field(
        "per_rollout", description="per_rollout: each trajectory weighs the same however many tokens it has; a "
        "mini-batch's loss is the mean over the rollouts present in it, so when drop_zero_variance_groups leaves "
        "groups out, the rest weigh more (normalising over a full mini-batch instead was tried in session 27: 0 of "
        "3 clear, docs/training-loop.md). per_token: one token-mean over the tokens present.")
    mask_cut_replies: bool | Literal["reinforced"] = Field(
        False, description="Overlong filtering (DAPO) per call: a call cut at the generation cap (finish_reason "
        "'length') stays in its rollout, whose reward and group advantage are unchanged, but its tokens are "
        "masked out of the loss. true: in every rollout; 'reinforced': only in rollouts above their group's mean "
        "reward (a cut reply is never reinforced but still pushed down where it lost; the local preset's value). "
        "Local trainer only: rejected with train.trainer = 'verl'.")
    max_grad_norm: float = Field(1.0, gt=0)
    steps: int = Field(100, ge=1)
    max_prompt_length: int = Field(4096, ge=1)
    max_response_length: int = Field(1024, ge=1)
    drop_zero_variance_groups: bool = Field(
        True, description="Leave groups whose rewards are all equal out of the step (they carry no policy gradient; "
        "see loss_norm for how that scales the rest). False: train them too, for kl_coef / entropy_coef.")
    skip_solved_tasks: bool = Field(
        False, description="Local trainer: a task whose last group scored full reward in every rollout leaves the "
        "rotation (its groups would be zero-variance) until fewer unsolved tasks remain than a step needs "
        "(training/workflows/task_sampler.py). veRL samples its own dataset: rejected with train.trainer = 'verl'.")
    gradient_checkpointing: bool = False
    compute_dtype: Literal["float32", "bfloat16", "auto"] | None = Field(
        None, description="Local trainer: dtype of the forward/backward passes (None: float32). bfloat16 runs "
        "them under torch.autocast (weights, gradients and AdamW state stay float32; logprobs are taken in "
        "float32 from the logits): ~1.7x faster steps on a CPU with AVX512-BF16, several times slower on one "
        "without (emulated). auto: bfloat16 where native (training/precision.py), else float32. Not read by "
        "veRL (its FSDP actor's mixed precision is its own): set with train.trainer = 'verl' it is rejected.")
    checkpoint_dir: str | None = Field(None, description="Default: <OPENFORGE_HOME>/runs/<run_id>/checkpoints.")
    save_every: int = Field(0, ge=0, description="Save a checkpoint every N steps (0: only at the end).")
    seed: int = 0
    prestart_rollouts: bool = Field(
        True, description="Synchronous local-trainer loop: start the next step's rollouts (sandboxes, harnesses, "
        "services) while the current step trains; their model calls wait until the new weights are in the engine, "
        "so every call is still sampled by the current policy (training/workflows/gate.py). false: rollouts start "
        "after the weight push. Not read by the async loop (it overlaps whole rollouts) nor by veRL: set "
        "explicitly with either it is rejected.")
    # Asynchronous rollouts with bounded staleness (issue 17; docs/training-loop.md)
    async_rollouts: bool = Field(
        False, description="Roll out the next step(s) while the current one trains. Local trainer (local engine): "
        "a step takes the first train_batch_size finished groups, waiting at most rollout.timeout_sec. veRL: its "
        "fully asynchronous trainer (verl.experimental.fully_async_policy), rollout and training on separate GPUs "
        "(rollout_gpus_per_node), every sample trained against its recorded logprobs (stale_policy = 'correct').")
    max_staleness: int = Field(
        1, ge=0, description="Policy versions a call may lag the trainer and still train as on-policy; in async "
        "mode also how many steps of rollouts run ahead (>= 1 there).")
    stale_policy: Literal["drop", "correct"] = Field(
        "drop", description="A trajectory with a call older than max_staleness: drop (counted) or correct (trained "
        "with truncated IS against each call's recorded logprobs, min(pi_trainer / pi_recorded, tis_cap)).")
    span_policy: Literal["per_call", "drop"] = Field(
        "per_call", description="A trajectory whose calls were sampled by several policy versions: per_call (each "
        "call scored against the logprobs its own version recorded) or drop (counted).")

    @model_validator(mode="after")
    def _async_needs_lookahead(self) -> TrainConfig:
        if self.async_rollouts and self.max_staleness < 1:
            raise ValueError("max_staleness = 0 with async_rollouts = true: every sample of a rollout started before "
                             "the last update would be stale; set max_staleness >= 1 or async_rollouts = false")
        return self


class RolloutConfig(_Section):
    """How rollouts are run for training (the orchestrator reads this section)."""

    harness: str = "react"
    backend: Literal["local", "docker", "kubernetes"] = "local"
    concurrency: int = Field(8, ge=1)
    timeout_sec: float = Field(600.0, gt=0)
    group_size: int | None = Field(None, ge=1, description="Defaults to train.group_size.")
    refill: bool = Field(True, description="Replace infra_error/timeout rollouts with fresh ones.")
    max_refills: int = Field(2, ge=0, description="Refills per group before giving up on it.")
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(1024, ge=1, description="Per model call; the proxy sets every call within it.")
    max_total_tokens: int | None = Field(None, ge=1, description="Generated tokens per rollout, all calls "
                                         "together; once spent the proxy refuses further calls (None: no cap).")
    cpus: float | None = Field(None, gt=0, description="Sandbox CPUs of every rollout (default: the task's).")
    memory_mb: int | None = Field(None, ge=64, description="Sandbox memory of every rollout (default: the task's).")


class EngineConfig(_Section):
    """Which policy engine serves rollouts."""

    kind: Literal["local", "vllm", "url"] = "local"
    model_path: str | None = Field(None, description="HF folder or hub id; None: the default model.")
    url: str | None = Field(None, description="Base URL for kind = vllm (attach) or url.")
    max_batch: int = Field(8, ge=1, description="Concurrent sequences per forward (local engine).")
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16", "auto"] = Field(
        "float32", description="Weights and passes of the engine. auto: the local engine takes bfloat16 where it "
        "is native (a CPU with AVX512-BF16/AMX, a CUDA device that supports it; training/precision.py), else "
        "float32; vLLM takes the model's own dtype.")
    threads: int | None = Field(
        None, ge=1,
        description="Local engine on CPU: intra-op threads of its forward passes. None: half the cores "
                    "(at least 1), leaving the rest to the harnesses, sandboxes and verifiers it runs beside; "
                    "every core for the engine of a synchronous RL run (train.async_rollouts = false), which "
                    "decodes while its trainer waits.")
    context_length: int | None = Field(
        None, ge=256,
        description="Local engine: tokens of context served. None: the default model at 32k (static YaRN, "
                    "for third-party harness prompts), any other model at its own window. At or below the "
                    "model's trained window no extension is applied (short prompts keep the model's own "
                    "behaviour). The trainer loads with the same positional encoding.")
    tensor_parallel_size: int = Field(1, ge=1, description="vLLM only.")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="vLLM only.")
    tool_call_parser: str | None = Field(None, description="vLLM only: --tool-call-parser (None: hermes, the "
                                         "format of the default model's chat template).")
    weight_sync: Literal["restart", "rpc"] | None = Field(
        None, description="vLLM with the local trainer: how new weights reach the server (None: rpc, vLLM's "
        "in-place reload; restart: a fresh server on each checkpoint).")

    @model_validator(mode="after")
    def _keys_of_this_kind(self) -> EngineConfig:
        if self.kind == "local":
            stray = [k for k in ("url", "gpu_memory_utilization", "tool_call_parser", "weight_sync")
                     if getattr(self, k) is not None]
            stray += ["tensor_parallel_size"] if self.tensor_parallel_size != 1 else []
            if stray:
                raise ValueError(f"{', '.join(stray)}: not read by engine.kind = 'local' (vLLM / url settings)")
        elif self.threads is not None:
            raise ValueError(f"threads: read by engine.kind = 'local' only (this engine is {self.kind!r})")
        if self.kind == "url" and not self.url:
            raise ValueError("engine.kind = 'url' needs engine.url")
        return self


class TasksConfig(_Section):
    """Which tasks of the bank a flow trains or evaluates on by default."""

    domain: str = Field("claw", description="Task domain (claw | computer-use | browser-use).")


class SftConfig(_Section):
    """Distillation (teacher rollouts) and the paper's SFT data filters."""

    teacher_rollouts: int = Field(3, ge=1, description="N rollouts of the teacher per SFT task.")
    success_threshold: float = Field(1.0, description="Reward at or above which a rollout succeeded.")
    max_identical_run: int = Field(3, ge=1, description="A run longer than this keeps only its last action.")
    max_identical_actions: int = Field(5, ge=1, description="More identical actions than this drops it.")
    shortest_per_task: bool = True
    lr: float = Field(1e-5, gt=0)
    epochs: int = Field(1, ge=1)
    batch_size: int = Field(4, ge=1)
    max_length: int = Field(4096, ge=1)


class Preset(BaseModel):
    """A whole preset. Every key is read by some room; an unknown one is an error."""

    model_config = ConfigDict(extra="forbid")

    name: str = "custom"
    description: str = ""
    source: str | None = Field(None, description="Where the hyper-parameters come from.")
    train: TrainConfig = Field(default_factory=TrainConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    #: Options handed to the harness adapter as they are (each adapter validates its own:
    #: react's max_steps / mode, mini-swe-agent's step_limit ...).
    harness_options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _group_sizes_agree(self) -> Preset:
        if self.rollout.group_size is None:
            self.rollout.group_size = self.train.group_size
        elif self.rollout.group_size != self.train.group_size:
            raise ValueError(
                f"rollout.group_size ({self.rollout.group_size}) != train.group_size "
                f"({self.train.group_size}); set one of them"
            )
        return self

    @model_validator(mode="after")
    def _keys_of_this_trainer(self) -> Preset:
        if effective_trainer(self) == "local":
            stray = ["train.nnodes"] if self.train.nnodes != 1 else []
            stray += ["train.n_gpus_per_node"] if self.train.n_gpus_per_node is not None else []
            stray += ["train.rollout_gpus_per_node"] if self.train.rollout_gpus_per_node is not None else []
            if stray:
                raise ValueError(f"{', '.join(stray)}: not read by the local trainer (veRL settings; "
                                 "set train.trainer = 'verl')")
        return self


def effective_trainer(preset: Preset) -> Literal["local", "verl"]:
    """``train.trainer``, or when unset: ``verl`` for a vLLM engine on cuda (a GPU node), else ``local``."""
    if preset.train.trainer is not None:
        return preset.train.trainer
    return "verl" if preset.engine.kind == "vllm" and preset.engine.device.startswith("cuda") else "local"


def list_presets(configs_dir: Path = CONFIGS_DIR) -> list[str]:
    """Names of the presets shipped in ``openforge/configs/``."""
    return sorted(p.stem for p in configs_dir.glob("*.toml"))


def preset_path(name_or_path: str | Path, configs_dir: Path = CONFIGS_DIR) -> Path:
    """Resolve a preset name (``claw``) or a TOML path to a file path."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise PresetError(f"{candidate}: preset file not found")
        return candidate
    named = configs_dir / f"{name_or_path}.toml"
    if not named.is_file():
        raise PresetError(
            f"unknown preset {str(name_or_path)!r}: no {named} (known: {', '.join(list_presets(configs_dir))})"
        )
    return named


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """Deep-merge ``overrides`` into a copy of ``data``; keys may be dotted (``train.lr``)."""
    merged = copy.deepcopy(data)
    for key, value in (overrides or {}).items():
        parts = key.split(".")
        node = merged
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        leaf = parts[-1]
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            node[leaf] = apply_overrides(node[leaf], value)
        else:
            node[leaf] = copy.deepcopy(value)
    return merged


def load_preset(
    name_or_path: str | Path, overrides: dict[str, Any] | None = None, *, configs_dir: Path = CONFIGS_DIR
) -> Preset:
    """Load a named preset or a TOML file, apply ``overrides`` and validate it."""
    path = preset_path(name_or_path, configs_dir)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"{path}: invalid TOML: {exc}") from exc
    data.setdefault("name", path.stem)
    data = apply_overrides(data, overrides)
    try:
        return Preset.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        if first["type"] == "extra_forbidden":
            msg = "unknown key (no room reads it; check the spelling)"
        else:
            value = first.get("input")
            msg = first["msg"] + ("" if isinstance(value, dict) or value is None else f", got {value!r}")
        origin = " (set by an override)" if where in _dotted_keys(overrides or {}) else ""
        raise PresetError(f"{path}: {where}: {msg}{origin}") from exc


def _dotted_keys(overrides: dict[str, Any], prefix: str = "") -> set[str]:
    """Every dotted key an override dict sets (``{"train": {"lr": 1}}`` → ``train``, ``train.lr``)."""
    keys: set[str] = set()
    for key, value in overrides.items():
        keys.add(prefix + str(key))
        if isinstance(value, dict):
            keys |= _dotted_keys(value, f"{prefix}{key}.")
    return keys
