"""Wall-clock ceilings of the learning-loop tasks, from the preset's own budgets.

These are hang guards (Prefect ``timeout_seconds``), not schedules: each is the worst case the
preset already allows plus a fixed allowance, so a run that keeps its budgets never meets one,
and a stage that hangs (a wedged engine, a sandbox the scheduler lost) fails with Prefect's
``TimedOut`` state instead of holding the job forever.

- Rollouts: the scheduler keeps ``rollout.concurrency`` sandboxes in flight and kills each at
  ``rollout.timeout_sec`` (its whole life: setup, harness, verifier; the engine's time on it
  does not count, up to ``environments.deadline.hard_deadline``), so ``R`` rollouts finish
  within ``ceil(R / concurrency)`` waves of that hard deadline, plus ``rollout.max_refills`` waves
  where failed rollouts are replaced.
- Optimiser updates have no preset budget; each is allowed :data:`UPDATE_S`.
- Every task also gets :data:`STARTUP_S` for loading a model, starting an engine and the proxy.

SFT: ``sft.epochs x ceil(examples / sft.batch_size)`` updates. It trains in a worker thread
under an async task (``tasks.training.sft_task``): past the ceiling the task ends ``TimedOut``
at once and the thread stops before its next update (a single blocked update, a wedged CUDA
kernel, cannot be interrupted from Python).
"""

from __future__ import annotations

import math

from environments.deadline import hard_deadline
from openforge.presets import Preset

#: Model load, engine start (a vLLM server included), proxy, exports.
STARTUP_S = 900.0
#: Ceiling of one optimiser update (forward, backward, step) on the slowest supported device.
UPDATE_S = 600.0
#: Examples assumed for an SFT data file whose row count cannot be read before training.
UNKNOWN_SFT_EXAMPLES = 256


def rollouts_s(preset: Preset, rollouts: int, *, refill: bool) -> float:
    """Worst case of ``rollouts`` sandboxes under the preset's concurrency and per-rollout timeout."""
    r = preset.rollout
    waves = math.ceil(max(rollouts, 1) / r.concurrency) + (r.max_refills if refill and r.refill else 0)
    return waves * hard_deadline(r.timeout_sec)


def distill_s(preset: Preset, tasks: int, n_per_task: int | None) -> float:
    """Teacher rollouts (``n_per_task``, else ``sft.teacher_rollouts``, per task; no refills)."""
    return STARTUP_S + rollouts_s(preset, tasks * (n_per_task or preset.sft.teacher_rollouts), refill=False)


def rl_s(preset: Preset, steps: int | None) -> float:
    """Per GRPO step: its ``train_batch_size`` groups of ``group_size`` rollouts (refills
    included) and its ``ppo_epochs x ceil(train_batch_size / ppo_mini_batch_size)`` updates."""
    t = preset.train
    n_steps = t.steps if steps is None else steps
    group = preset.rollout.group_size or t.group_size
    mini = min(t.ppo_mini_batch_size or t.train_batch_size, t.train_batch_size)
    updates = t.ppo_epochs * math.ceil(t.train_batch_size / mini)
    return STARTUP_S + n_steps * (rollouts_s(preset, t.train_batch_size * group, refill=True) + updates * UPDATE_S)


def evaluate_s(preset: Preset, tasks: int, samples: int, harnesses: int) -> float:
    """``samples`` rollouts per task, for each harness in turn (no refills)."""
    return STARTUP_S + harnesses * rollouts_s(preset, tasks * samples, refill=False)


def sft_s(preset: Preset, examples: int | None) -> float:
    """``sft.epochs x ceil(examples / sft.batch_size)`` updates; ``examples`` unknown (a file not
    readable here) counts as :data:`UNKNOWN_SFT_EXAMPLES`."""
    updates = preset.sft.epochs * math.ceil((examples if examples is not None else UNKNOWN_SFT_EXAMPLES) / preset.sft.batch_size)
    return STARTUP_S + updates * UPDATE_S


def _task_wall_clock(task_dir: str) -> float:
    """The task's agent + verifier + build budgets; a day when the agent has none or the dir
    does not load (the rollout reports that itself)."""
    from environments.taskdir import load_task
    from training.orchestrator.single import NO_AGENT_LIMIT_WALL_SEC, task_wall_clock

    try:
        return task_wall_clock(load_task(task_dir))
    except (OSError, ValueError):
        return NO_AGENT_LIMIT_WALL_SEC


def single_rollout_s(task_dir: str, timeout: float | None) -> float:
    """One rollout (``openforge rollout``): its wall clock, ``timeout`` or else the task's own
    agent + verifier + build budgets (a day when the agent has none), to its hard deadline."""
    return STARTUP_S + hard_deadline(timeout or _task_wall_clock(task_dir))


def verify_s(task_dirs: list[str]) -> float:
    """``tasks verify``: an oracle and a no-op rollout per task, one after the other, each to
    its hard deadline."""
    return STARTUP_S + sum(2 * hard_deadline(_task_wall_clock(d)) for d in task_dirs)
