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
    if train_files:
        out["data"]["train_files"] = train_files
    if val_files:
        out["data"]["val_files"] = val_files
    return out


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


def verl_defaults_path() -> Path:
    """veRL's generated, fully-resolved default PPO trainer config."""
    import importlib.util

    spec = importlib.util.find_spec("verl")  # no import: `import verl` takes tens of seconds
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("verl is not installed (scripts/install-verl.sh)")
    return Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config" / "_generated_ppo_trainer.yaml"


def verl_config(preset: Preset, **kwargs: Any) -> Any:
    """veRL's default config with ``preset`` merged in (an omegaconf ``DictConfig``).

    Raises ``KeyError`` naming the key when veRL's config has no such field.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigKeyError

    base = OmegaConf.load(verl_defaults_path())
    OmegaConf.set_struct(base, True)
    OmegaConf.set_struct(base.actor_rollout_ref.rollout.engine_kwargs.vllm, False)  # added keys (see doc)
    values = verl_overrides(preset, **kwargs)
    try:
        return OmegaConf.merge(base, OmegaConf.create(values))
    except ConfigKeyError as exc:
        raise KeyError(f"veRL config has no key {exc.full_key!r} (preset {preset.name})") from exc
