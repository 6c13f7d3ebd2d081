"""What each pipeline stage's cached result depends on (docs/resume.md), by content.

- the task directories' content hashes (:func:`environments.taskdir.content_sha`), as a set;
- the start checkpoint's content hash (:func:`openforge.hashing.checkpoint_sha`), the default
  policy's when none is given; a Hugging Face hub id by its name;
- the SFT data file's sha256;
- the preset keys the stage reads (:data:`READS`), after overrides, so a GRPO override leaves
  distillation and SFT cached, and editing a preset file counts like an override;
- the stage's other arguments; :func:`tasks.cache.stage_key` adds the stage name, the data
  dir and :data:`tasks.cache.KEY_VERSION`.

Each ``*_identity`` maps a Prefect task's inputs to that document; the ``*_KEY`` policies are
what the tasks in :mod:`tasks.training` and :mod:`tasks.synthesis` declare.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.taskdir import content_sha
from openforge.hashing import checkpoint_sha, file_sha256
from openforge.presets import load_preset
from tasks.cache import StageInputs

#: Dotted preset keys each stage reads (a section name: all of it), mirroring the workflows:
#: rollouts read ``[rollout]``, ``[engine]`` and ``[harness_options]`` (and ``train.seed``, the
#: engine's sampling seed; ``train.trainer``, which picks the engine); SFT reads the optimiser
#: keys of ``[train]`` that ``sft_train_config`` keeps; GRPO reads everything but ``[sft]``.
_ROLLOUT_READS = ("rollout", "engine", "harness_options", "train.seed", "train.trainer")
READS: dict[str, tuple[str, ...]] = {
    "distill": (*_ROLLOUT_READS, "sft.teacher_rollouts", "sft.success_threshold", "sft.max_identical_run",
                "sft.max_identical_actions", "sft.shortest_per_task"),
    "sft-train": ("sft.lr", "sft.epochs", "sft.batch_size", "sft.max_length", "engine.device", "engine.context_length",
                  "engine.model_path", "train.seed", "train.adam_betas", "train.weight_decay", "train.warmup_steps",
                  "train.max_grad_norm", "train.compute_dtype", "train.micro_batch_size", "train.gradient_checkpointing",
                  "train.checkpoint_dir", "train.save_every"),
    "rl-train": ("train", "rollout", "engine", "harness_options"),
    "evaluate": _ROLLOUT_READS,
}


def preset_view(preset: str, overrides: dict[str, Any], reads: Sequence[str]) -> dict[str, Any]:
    """The values of ``reads`` in the preset as loaded with ``overrides``."""
    full = load_preset(preset, overrides).model_dump(mode="json")
    view: dict[str, Any] = {}
    for dotted in reads:
        section, _, key = dotted.partition(".")
        view[dotted] = full[section][key] if key else full[section]
    return view


def task_set(task_dirs: Sequence[str]) -> list[str]:
    """The tasks' content hashes, sorted: the same tasks anywhere give the same list."""
    return sorted(content_sha(d) for d in task_dirs)


def policy_sha(preset: str, overrides: dict[str, Any], model_path: str | None) -> str:
    """The start policy's identity: the checkpoint's content hash (``model_path``, else
    ``engine.model_path``, else ``$OPENFORGE_MODEL``, else the default model)."""
    from training.engines.model_store import resolve_model

    chosen = model_path or load_preset(preset, overrides).engine.model_path
    source = resolve_model(chosen)
    return checkpoint_sha(source) if Path(source).exists() else f"hub:{source}"


# What each stage's result depends on, from its Prefect task's inputs.

def synthesis_identity(inputs: dict[str, Any]) -> dict[str, Any] | None:
    """A seeded (or named) synthesis run is a function of its parameters; an unseeded new run
    (the nightly job) must make new tasks every time, so it is never cached. ``parallelism``
    changes speed, not tasks."""
    if inputs.get("seed") is None and inputs.get("run_id") is None:
        return None
    return {k: v for k, v in inputs.items() if k != "parallelism"}


def distill_identity(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"preset": preset_view(inputs["preset"], inputs["overrides"], READS["distill"]),
            "tasks": task_set(inputs["task_dirs"]), "teacher": inputs["teacher"], "n_per_task": inputs["n_per_task"],
            "policy": policy_sha(inputs["preset"], inputs["overrides"], inputs.get("model_path"))}


def sft_identity(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"preset": preset_view(inputs["preset"], inputs["overrides"], READS["sft-train"]),
            "data": file_sha256(inputs["data"]),
            "policy": policy_sha(inputs["preset"], inputs["overrides"], inputs.get("model_path"))}


def rl_identity(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"preset": preset_view(inputs["preset"], inputs["overrides"], READS["rl-train"]),
            "tasks": task_set(inputs["task_dirs"]), "steps": inputs["steps"],
            "policy": policy_sha(inputs["preset"], inputs["overrides"], inputs.get("model_path"))}


def evaluate_identity(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"preset": preset_view(inputs["preset"], inputs["overrides"], READS["evaluate"]),
            "tasks": task_set(inputs["task_dirs"]), "label": inputs["label"], "harnesses": list(inputs["harnesses"]),
            "k": inputs["k"], "n": inputs.get("n"),
            "policy": policy_sha(inputs["preset"], inputs["overrides"], inputs.get("model_path"))}


SYNTHESIS_KEY = StageInputs(stage="synthesize", identity=synthesis_identity,
                            outputs=lambda report: list(report["verified_dirs"]))
DISTILL_KEY = StageInputs(stage="distill", identity=distill_identity, outputs=lambda r: [r.parquet, r.jsonl])
SFT_KEY = StageInputs(stage="sft-train", identity=sft_identity, outputs=lambda r: [r.checkpoint])
RL_KEY = StageInputs(stage="rl-train", identity=rl_identity, outputs=lambda r: [r.checkpoint] if r.checkpoint else [])
EVALUATE_KEY = StageInputs(stage="evaluate", identity=evaluate_identity)
