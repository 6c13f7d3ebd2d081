"""A checkout or venv under /tmp stays visible inside bubblewrap (whose /tmp is a fresh tmpfs),
but only the packages the runner imports: never the checkout itself or its task dirs."""

from __future__ import annotations

from pathlib import Path

from training.orchestrator import runtime
from training.orchestrator.bwrap import BwrapPlan, build_argv


def test_runtime_under_tmp_is_bound_back_after_the_tmpfs(monkeypatch, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"  # pytest's tmp_path lies under /tmp
    assert str(checkout).startswith("/tmp/")
    example = checkout / "environments" / "fam" / "examples" / "t1"
    example.mkdir(parents=True)
    (example / "task.toml").write_text("")
    (checkout / "tests").mkdir()
    monkeypatch.setattr(runtime, "REPO_ROOT", checkout)
    argv = build_argv(BwrapPlan(), chdir="/", command=["true"])
    tmpfs = argv.index("/tmp", argv.index("--tmpfs"))
    pkg = str(checkout / "environments")
    bind = argv.index(pkg)
    assert argv[bind - 1] == "--ro-bind" and argv[bind + 1] == pkg
    assert bind > tmpfs
    assert str(checkout) not in argv and str(checkout / "tests") not in argv
    hide = argv.index(str(example))
    assert argv[hide - 1] == "--tmpfs" and hide > bind


def test_sandbox_env_names_this_checkout_first(monkeypatch) -> None:
    from environments.records import RolloutSpec

    spec = RolloutSpec(rollout_id="r", task_dir="/t", harness="noop", env={"PYTHONPATH": "/task/lib"})
    env = runtime.sandbox_env(spec, dockerfile_env={}, home="/home/sandbox")
    assert env["PYTHONPATH"].split(":") == [str(runtime.REPO_ROOT), "/task/lib"]
