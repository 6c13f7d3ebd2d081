"""The veRL driver: ``python -m training.trainers.verl.main KEY=VALUE ...``.

**Hook: veRL's ``main_ppo`` entry, unchanged, behind a thin driver** (not a trainer subclass):
the driver composes veRL's own ``ppo_trainer`` config with the hydra overrides from the
preset (:func:`training.trainers.verl.launch.verl_command`), runs veRL's ``validate_config``
on it (strict: an unknown key fails here, on the driver, not in a Ray worker), makes sure
what veRL resolves by name exists where it resolves it, and calls
``verl.trainer.main_ppo.run_ppo(config, TaskRunnerV1)`` — veRL's default trainer, its FSDP
actor, reference, vLLM replicas and weight sync. OpenForge plugs in at veRL's supported seam,
the agent loop (:mod:`.agent_loop`, registered from ``agent_loop.yaml``), so nothing of
``RayPPOTrainer.fit`` is copied.

Asynchronous mode (the overrides set ``async_training.*``, from ``train.async_rollouts``):
the config is veRL's ``fully_async_ppo_trainer`` and the entry is veRL's own
``verl.experimental.fully_async_policy.fully_async_main.main``, called through
``__wrapped__`` (its body without hydra's command-line parsing, which the driver has done):
the same agent loop, estimator and worker setup, under veRL's rollouter/trainer split.

What the driver adds before ``run_ppo``:

- the ``openforge_grpo`` estimator is registered here and, through Ray's
  ``worker_process_setup_hook`` (:func:`worker_setup`), in every Ray worker (the TaskRunner
  that computes advantages is one);
- ``runtime_env.env_vars`` carries ``PYTHONPATH`` (this checkout, so workers import
  ``training.*``) and the ``OPENFORGE_*`` variables the rollout function reads
  (:mod:`.rollout`);
- the agent loop and the rollout function are imported once here, so a broken import path
  fails before Ray starts.

:func:`prepare` does all of that up to (not including) ``run_ppo``; on a CPU-only machine it
is as far as veRL goes (tests/training/trainers/test_verl_driver.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Environment variables the driver forwards to every Ray worker.
FORWARDED_ENV = ("OPENFORGE_HOME", "OPENFORGE_DB", "OPENFORGE_ADMIN_KEY", "OPENFORGE_VERL_PRESET",
                 "OPENFORGE_VERL_OVERRIDES", "OPENFORGE_VERL_TASKS", "OPENFORGE_VERL_RUN_ID", "OPENFORGE_VERL_SERVERS",
                 "OPENFORGE_VERL_ROLLOUT_FN", "OPENFORGE_MODEL", "OPENFORGE_TOOLS_DIR")


def verl_config_dir() -> Path:
    from training.trainers.verl.config import verl_defaults_path  # noqa: PLC0415

    return verl_defaults_path().parent


def is_async(overrides: list[str]) -> bool:
    """Whether ``overrides`` ask for veRL's fully asynchronous trainer."""
    return any(o.lstrip("+").startswith("async_training.") for o in overrides)


def compose_config(overrides: list[str]) -> Any:
    """veRL's ``ppo_trainer`` config (``fully_async_ppo_trainer`` when :func:`is_async`) with
    ``overrides`` applied by hydra (struct mode)."""
    from hydra import compose, initialize_config_dir  # noqa: PLC0415
    from hydra.core.global_hydra import GlobalHydra  # noqa: PLC0415

    from training.trainers.verl.config import fully_async_config_dir  # noqa: PLC0415

    config_dir, name = ((fully_async_config_dir(), "fully_async_ppo_trainer") if is_async(overrides)
                        else (verl_config_dir(), "ppo_trainer"))
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def worker_setup() -> None:
    """Ray ``worker_process_setup_hook``: what every worker needs before veRL resolves names."""
    from training.trainers.verl.advantage import register  # noqa: PLC0415
    import training.trainers.verl.agent_loop  # noqa: F401, PLC0415 - @register("openforge")

    register()


def prepare(config: Any) -> Any:
    """Everything up to ``run_ppo`` (see the module doc); returns ``config``."""
    from omegaconf import OmegaConf, open_dict  # noqa: PLC0415
    from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: PLC0415
    from verl.utils.config import validate_config  # noqa: PLC0415

    from training.trainers.verl.agent_loop import resolve_rollout_fn  # noqa: PLC0415

    worker_setup()
    loops = OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path)
    for loop in loops:  # the agent loop class and its rollout function import here, not first in a worker
        module, _, name = str(loop._target_).rpartition(".")
        getattr(importlib.import_module(module), name)
        resolve_rollout_fn(loop.get("rollout_fn"))
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    env = {k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    with open_dict(config):
        runtime_env = config.ray_kwargs.ray_init.runtime_env
        runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **env}
        runtime_env["worker_process_setup_hook"] = f"{__name__}.worker_setup"
    return config


def main(argv: list[str] | None = None) -> None:
    config = prepare(compose_config(sys.argv[1:] if argv is None else argv))
    if "async_training" in config:
        from verl.experimental.fully_async_policy import fully_async_main  # noqa: PLC0415

        fully_async_main.main.__wrapped__(config)  # veRL's entry body; hydra's CLI parsing is done
        return
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo  # noqa: PLC0415

    run_ppo(config, task_runner_class=TaskRunnerV1)


if __name__ == "__main__":  # pragma: no cover - needs GPUs
    main()
