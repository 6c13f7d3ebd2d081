"""An OpenForge preset → veRL 0.9's hydra config for GRPO with the OpenForge agent loop.

:func:`verl_overrides` maps our ``[train]``/``[rollout]``/``[engine]`` fields onto veRL's
keys (nested dict); :func:`to_hydra_overrides` flattens it to ``key=value`` strings for
``python -m verl.trainer.main_ppo``; :func:`verl_config` merges it into veRL's own
generated ``ppo_trainer`` defaults in struct mode, so a key veRL does not know fails here
rather than deep inside a Ray worker.

Advantages: veRL's own ``grpo`` estimator. veRL 0.9.1's default (v1) trainer computes it on
each session's last output and broadcasts it to the session's other outputs
(``compute_advantage_for_multi_trajectories``), which is trajectory-level GRPO over the
list-of-outputs the agent loop returns — what :func:`training.trajectory.grpo.assign_group_advantages`
computes at γ = 1 (checked in tests/training/trainers/test_verl_backend.py). A custom
estimator would see only the prompt ``uid`` there (not the session), so it could not group
by trajectory; ``openforge_grpo`` (:mod:`.advantage`) remains for one-row-per-call batches
(:mod:`.rows`) and is registered by the driver for runs that ask for it. γ < 1 is refused
for veRL by the composition (veRL broadcasts one advantage to every call).

Rollout replicas: veRL starts its own vLLM servers; ``engine_kwargs.vllm`` turns on auto tool
choice with ``engine.tool_call_parser`` (hermes by default) so requests carrying ``tools``
are accepted, and ``logprobs_mode = processed_logprobs`` makes their logprobs those of the
sampling distribution. Keys veRL's defaults lack (the ``engine_kwargs.vllm`` entries) are
*added* keys: :func:`to_hydra_overrides` writes them with hydra's ``+`` prefix.

Mapping notes: ``train_batch_size`` is task groups per step (veRL ``data.train_batch_size``),
``rollout.n`` = G, the mini-batch (one optimiser update) is ``train.ppo_mini_batch_size``
groups (default the whole step's: one update per epoch, like the local trainer),
``loss_norm`` per_token → ``token-mean`` and per_rollout → ``seq-mean-token-mean`` (exact
when each trajectory is one row, which the agent loop guarantees), KL is veRL's
``use_kl_loss`` with ``low_var_kl`` (= k3).

Asynchronous mode (``train.async_rollouts``, :func:`async_overrides`): veRL's fully
asynchronous trainer (``verl.experimental.fully_async_policy``; config
``fully_async_ppo_trainer``, a layer over ``ppo_trainer``). Rollout replicas and the FSDP
trainer get separate GPUs (``train.rollout_gpus_per_node`` of each node serve rollouts, the
rest train). A trainer step takes ``train_batch_size`` groups (``require_batches`` mini-batches
of ``ppo_mini_batch_size``) and syncs weights after every step
(``trigger_parameter_sync_step = 1``); the rollouter may run ``train.max_staleness`` steps'
worth of groups ahead of the last sync (``staleness_threshold``), so a trajectory's calls lag
the trainer by at most that many versions. Every sample is trained against the logprobs its
replica recorded (``use_rollout_log_probs`` with rollout-correction ``bypass_mode``: the PPO
ratio is pi_theta / pi_sampling per token), which is OpenForge's ``stale_policy = 'correct'``
with per-call ratios (``span_policy = 'per_call'``); veRL has no drop, so the composition
refuses the other two. ``partial_rollout`` is off: veRL aborts in-flight requests at every
weight sync, and OpenForge's calls reach the replicas over HTTP through the proxy, which turns
an aborted call into a retryable 503 (the harness re-sends it to the new weights) rather than
resuming it token by token as veRL's own client does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openforge.presets import Preset

LOSS_AGG = {"per_token": "token-mean", "per_rollout": "seq-mean-token-mean"}
AGENT_LOOP_NAME = "openforge"
ADV_ESTIMATOR = "grpo"
#: Subtrees veRL's defaults declare empty: keys under them are added (hydra ``+key=value``).
ADDED_KEY_PREFIXES = ("actor_rollout_ref.rollout.engine_kwargs.vllm.",)


def verl_overrides(
    preset: Preset,
    *,
    model_path: str,
    train_files: str | None = None,
    val_files: str | None = None,
    agent_loop_config_path: str | None = None,
    n_gpus_per_node: int = 1,
    nnodes: int = 1,
    experiment_name: str | None = None,
) -> dict[str, Any]:
    """veRL config values (nested) for ``preset``."""
    t, r, e = preset.train, preset.rollout, preset.engine

    actor = {
        "optim": {"lr": t.lr, "weight_decay": t.weight_decay, "betas": list(t.adam_betas), "lr_warmup_steps": t.warmup_steps or -1, "clip_grad": t.max_grad_norm},
        "ppo_mini_batch_size": min(t.ppo_mini_batch_size or t.train_batch_size, t.train_batch_size),
        "ppo_micro_batch_size_per_gpu": t.micro_batch_size,
        "ppo_epochs": t.ppo_epochs,
        "clip_ratio": t.clip_eps_low,
        "clip_ratio_low": t.clip_eps_low,
        "clip_ratio_high": t.clip_eps_high,
        "clip_ratio_c": t.dual_clip_c if t.dual_clip_c is not None else 1e9,
        "loss_agg_mode": LOSS_AGG[t.loss_norm],
        "use_kl_loss": t.kl_coef > 0,
        "kl_loss_coef": t.kl_coef,
        "kl_loss_type": "low_var_kl",
        "entropy_coeff": t.entropy_coef,
        "grad_clip": t.max_grad_norm,
    }
    rollout = {
        "name": "vllm",
        "mode": "async",
        "n": t.group_size,
        "temperature": r.temperature,
        "top_p": r.top_p,
        "prompt_length": t.max_prompt_length,
        "response_length": t.max_response_length,
        **({"gpu_memory_utilization": e.gpu_memory_utilization} if e.gpu_memory_utilization is not None else {}),
        "tensor_model_parallel_size": e.tensor_parallel_size,
        "calculate_log_probs": True,
        "logprobs_mode": "processed_logprobs",
        "engine_kwargs": {"vllm": {"enable_auto_tool_choice": True, "tool_call_parser": e.tool_call_parser or "hermes"}},
        "log_prob_micro_batch_size_per_gpu": t.micro_batch_size,
        "agent": {"default_agent_loop": AGENT_LOOP_NAME, "num_workers": max(1, min(r.concurrency, 8))},
    }
    if agent_loop_config_path:
        rollout["agent"]["agent_loop_config_path"] = agent_loop_config_path
    out: dict[str, Any] = {
        "algorithm": {"adv_estimator": ADV_ESTIMATOR, "gamma": t.gamma, "norm_adv_by_std_in_grpo": t.norm_adv_by_std, "use_kl_in_reward": False},
        "data": {
            "train_batch_size": t.train_batch_size,
            "max_prompt_length": t.max_prompt_length,
            "max_response_length": t.max_response_length,
            "return_raw_chat": True,
        },
        "actor_rollout_ref": {
            "model": {"path": model_path, "enable_gradient_checkpointing": t.gradient_checkpointing},
            "actor": actor,
            "rollout": rollout,
            "ref": {"log_prob_micro_batch_size_per_gpu": t.micro_batch_size},
        },
        "trainer": {
            "total_training_steps": t.steps,
            "n_gpus_per_node": n_gpus_per_node,
            "nnodes": nnodes,
            "save_freq": t.save_every or -1,
            "project_name": "openforge",
            "experiment_name": experiment_name or preset.name,
            "val_before_train": False,
            "logger": ["console"],
            "use_v1": True,
        },
    }
    if t.checkpoint_dir:
        out["trainer"]["default_local_dir"] = t.checkpoint_dir
    if t.async_rollouts:
        merge(out, async_overrides(preset, n_gpus_per_node=n_gpus_per_node, nnodes=nnodes))
    if train_files:
        out["data"]["train_files"] = train_files
    if val_files:
        out["data"]["val_files"] = val_files
    return out


def split_gpus(preset: Preset, n_gpus_per_node: int) -> tuple[int, int]:
    """``(rollout GPUs, trainer GPUs)`` per node of veRL's asynchronous mode; raises
    ``ValueError`` naming the key when either side would get none."""
    chosen = preset.train.rollout_gpus_per_node
    rollout = chosen or max(1, n_gpus_per_node // 2)
    if rollout >= n_gpus_per_node:
        what = (f"train.rollout_gpus_per_node = {chosen} leaves none of the node's {n_gpus_per_node} GPUs to train"
                if chosen else f"the node has {n_gpus_per_node} GPU(s)")
        raise ValueError(f"{what}: veRL's fully asynchronous trainer needs separate rollout and training GPUs "
                         "(at least 2 per node)")
    return rollout, n_gpus_per_node - rollout


def require_batches(preset: Preset) -> int:
    """Mini-batches per step of veRL's asynchronous trainer (``train_batch_size`` groups in
    ``ppo_mini_batch_size`` ones); raises ``ValueError`` naming the keys when they do not divide."""
    t = preset.train
    mini = min(t.ppo_mini_batch_size or t.train_batch_size, t.train_batch_size)
    if t.train_batch_size % mini:
        raise ValueError(f"train.ppo_mini_batch_size = {mini} does not divide train.train_batch_size = "
                         f"{t.train_batch_size}: veRL's asynchronous trainer takes whole mini-batches per step")
    return t.train_batch_size // mini


def async_overrides(preset: Preset, *, n_gpus_per_node: int, nnodes: int = 1) -> dict[str, Any]:
    """The keys of veRL's ``fully_async_ppo_trainer`` for ``preset`` (module doc, asynchronous mode)."""
    t = preset.train
    rollout_gpus, train_gpus = split_gpus(preset, n_gpus_per_node)
    return {
        "async_training": {"staleness_threshold": float(t.max_staleness), "trigger_parameter_sync_step": 1,
                           "require_batches": require_batches(preset), "partial_rollout": False},
        "rollout": {"nnodes": nnodes, "n_gpus_per_node": rollout_gpus, "n": t.group_size,
                    "total_rollout_steps": t.steps * t.train_batch_size},
        "data": {"gen_batch_size": 1},
        "trainer": {"n_gpus_per_node": train_gpus},
        "actor_rollout_ref": {"hybrid_engine": False, "actor": {"use_rollout_log_probs": True}},
        "algorithm": {"rollout_correction": {"bypass_mode": True}},
    }


def merge(into: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Merge nested ``values`` into ``into`` (in place; ``values`` wins)."""
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def to_hydra_overrides(values: dict[str, Any], prefix: str = "") -> list[str]:
    """Flatten a nested dict to hydra ``a.b=value`` override strings."""
    out: list[str] = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(to_hydra_overrides(value, f"{path}."))
            continue
        add = "+" if path.startswith(ADDED_KEY_PREFIXES) else ""
        if isinstance(value, bool):
            out.append(f"{add}{path}={'true' if value else 'false'}")
        elif isinstance(value, list):
            out.append(f"{add}{path}=[{','.join(repr(v) if isinstance(v, str) else str(v) for v in value)}]")
        elif value is None:
            out.append(f"{add}{path}=null")
        else:
            out.append(f"{add}{path}={value}")
    return out


def verl_package_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("verl")  # no import: `import verl` takes tens of seconds
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("verl is not installed (scripts/install-verl.sh)")
    return Path(next(iter(spec.submodule_search_locations)))


def verl_defaults_path() -> Path:
    """veRL's generated, fully-resolved default PPO trainer config."""
    return verl_package_dir() / "trainer" / "config" / "_generated_ppo_trainer.yaml"


def fully_async_config_dir() -> Path:
    """Where veRL keeps ``fully_async_ppo_trainer.yaml`` (hydra defaults: ``ppo_trainer``)."""
    return verl_package_dir() / "experimental" / "fully_async_policy" / "config"


def verl_config(preset: Preset, **kwargs: Any) -> Any:
    """veRL's default config (``fully_async_ppo_trainer``'s in asynchronous mode) with ``preset``
    merged in (an omegaconf ``DictConfig``).

    Raises ``KeyError`` naming the key when veRL's config has no such field.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigKeyError

    base = OmegaConf.load(verl_defaults_path())
    if preset.train.async_rollouts:  # the fully async layer over ppo_trainer, as its hydra defaults compose it
        layer = OmegaConf.load(fully_async_config_dir() / "fully_async_ppo_trainer.yaml")
        base = OmegaConf.merge(base, {k: v for k, v in layer.items() if k not in ("hydra", "defaults")})
    OmegaConf.set_struct(base, True)
    OmegaConf.set_struct(base.actor_rollout_ref.rollout.engine_kwargs.vllm, False)  # added keys (see doc)
    values = verl_overrides(preset, **kwargs)
    try:
        return OmegaConf.merge(base, OmegaConf.create(values))
    except ConfigKeyError as exc:
        raise KeyError(f"veRL config has no key {exc.full_key!r} (preset {preset.name})") from exc
