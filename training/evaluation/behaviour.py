"""Behaviour analysis of recorded trajectories: tool usage and the paper's five capabilities.

Each capability is a rate in [0, 1] over the trajectories of one checkpoint:
- format robustness: share of model calls whose actions are all well-formed (tool-call
  arguments that parse);
- error recovery: share of tool errors after which the trajectory still ends successful;
- self-verification: share of successful trajectories whose last action is a read/check
  (a tool whose name says it reads, lists, searches or gets) rather than a write;
- tool coverage: share of the task's available tools the trajectory used, averaged;
- step efficiency: for successful trajectories, shortest successful length of that task
  divided by this trajectory's length (1.0 = as short as the best run).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.evaluation.actions import Step, trajectory_steps

CAPABILITIES = ("format_robustness", "error_recovery", "self_verification", "tool_coverage", "step_efficiency")
_READ_WORDS = ("read", "get", "list", "search", "view", "show", "find", "fetch", "cat", "check", "audit", "state")


@dataclass
class Trajectory:
    task_id: str
    reward: float
    calls: list[dict[str, Any]]
    available_tools: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return trajectory_steps(self.calls)


def _is_read(tool: str, arguments: Any) -> bool:
    name = tool.lower()
    if name in ("bash", "exec_command", "shell"):
        cmd = str(arguments.get("command", arguments.get("cmd", "")) if isinstance(arguments, dict) else arguments)
        words = cmd.split()
        for form in (["claw-call"], ["python3", "-m", "environments.claw.call"],
                     ["python", "-m", "environments.claw.call"]):
            if words[:len(form)] == form and len(words) > len(form):  # a claw tool call: by the tool's name
                return _is_read(words[len(form)], {})
        return any(cmd.strip().startswith(w) for w in ("cat", "ls", "grep", "head", "tail", "curl"))
    return any(w in name for w in _READ_WORDS)


def tool_usage(trajectories: Iterable[Trajectory]) -> Counter[str]:
    """How often each tool was called."""
    counts: Counter[str] = Counter()
    for traj in trajectories:
        for step in traj.steps:
            counts.update(a.tool for a in step.actions)
    return counts


def capabilities(trajectories: list[Trajectory], success_threshold: float = 1.0) -> dict[str, float]:
    """The five capability rates (NaN-free: a rate with no evidence is reported as 0)."""
    calls_total = calls_ok = 0
    errors = recovered = 0
    successes = verified = 0
    coverage: list[float] = []
    best_len: dict[str, int] = {}
    for traj in trajectories:
        if traj.reward >= success_threshold:
            best_len[traj.task_id] = min(best_len.get(traj.task_id, 10**9), max(1, len(traj.calls)))
    efficiency: list[float] = []
    for traj in trajectories:
        steps = traj.steps
        success = traj.reward >= success_threshold
        for step in steps:
            calls_total += 1
            calls_ok += all(a.well_formed for a in step.actions)
            errors += step.tool_errors
            recovered += step.tool_errors if success else 0
        actions = [a for s in steps for a in s.actions]
        if success:
            successes += 1
            verified += bool(actions) and _is_read(actions[-1].tool, actions[-1].arguments)
            efficiency.append(best_len[traj.task_id] / max(1, len(traj.calls)))
        if traj.available_tools:
            used = {a.tool for a in actions}
            coverage.append(len(used & set(traj.available_tools)) / len(set(traj.available_tools)))

    def rate(num: float, den: float) -> float:
        return num / den if den else 0.0

    return {
        "format_robustness": rate(calls_ok, calls_total),
        "error_recovery": rate(recovered, errors),
        "self_verification": rate(verified, successes),
        "tool_coverage": rate(sum(coverage), len(coverage)),
        "step_efficiency": rate(sum(efficiency), len(efficiency)),
    }


def radar_png(named: dict[str, dict[str, float]], path: str | Path, title: str = "Capabilities") -> Path:
    """A radar chart comparing checkpoints (name → capability rates) saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = list(CAPABILITIES)
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(5.5, 5.5), subplot_kw={"polar": True})
    for name, scores in named.items():
        values = [scores.get(label, 0.0) for label in labels]
        ax.plot(angles + angles[:1], values + values[:1], label=name, linewidth=2)
        ax.fill(angles + angles[:1], values + values[:1], alpha=0.15)
    ax.set_xticks(angles)
    ax.set_xticklabels([label.replace("_", "\n") for label in labels], fontsize=9)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(loc="upper right", bbox_to_anchor=(1.25, 1.1), fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def per_task_rewards(trajectories: Iterable[Trajectory]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for traj in trajectories:
        out[traj.task_id].append(traj.reward)
    return dict(out)
