"""A checkout or venv under /tmp stays visible inside bubblewrap (whose /tmp is a fresh tmpfs)."""

from __future__ import annotations

from pathlib import Path

from training.orchestrator import runtime
from training.orchestrator.bwrap import BwrapPlan, build_argv


def test_runtime_under_tmp_is_bound_back_after_the_tmpfs(monkeypatch, tmp_path: Path) -> None:
    checkout = Path("/tmp") / tmp_path.name / "checkout"
    monkeypatch.setattr(runtime, "REPO_ROOT", checkout)
    argv = build_argv(BwrapPlan(), chdir="/", command=["true"])
    tmpfs = argv.index("/tmp", argv.index("--tmpfs"))
    bind = argv.index(str(checkout))
    assert argv[bind - 1] == "--ro-bind" and argv[bind + 1] == str(checkout)
    assert bind > tmpfs


def test_sandbox_env_names_this_checkout_first(monkeypatch) -> None:
    from environments.records import RolloutSpec

    spec = RolloutSpec(rollout_id="r", task_dir="/t", harness="noop", env={"PYTHONPATH": "/task/lib"})
    env = runtime.sandbox_env(spec, dockerfile_env={}, home="/home/sandbox")
    assert env["PYTHONPATH"].split(":") == [str(runtime.REPO_ROOT), "/task/lib"]
