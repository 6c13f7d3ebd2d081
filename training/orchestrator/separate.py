"""Harbor's ``[verifier] environment_mode = "separate"`` on every backend (issue 14).

The agent's sandbox ends after the agent phase: the runner hands the declared artifacts over
in ``<logs>/artifacts/`` and runs no verifier. The scheduler then verifies in a *fresh*
sandbox on the same backend: a derived task dir (:func:`verifier_task`) whose environment is
the task's verifier declaration (ours: ``[metadata.openforge] verifier_environment = "<dir>"``,
read from ``[verifier] environment = "<dir>"`` too; Harbor's: a Dockerfile in ``tests/``; default
the task's own ``environment/``) with the artifacts copied into its WORKDIR by one appended ``COPY``, run
with the ``noop`` harness — no agent, no token — so its ``tests/test.sh`` scores what the
agent left and nothing else. The derived dir lives in the rollout's dir and goes with it.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import tomli_w

from environments.taskdir import TaskDir
from training.orchestrator.dockerfile import parse_dockerfile

ARTIFACTS_CONTEXT = "openforge-artifacts"


def is_separate(task: TaskDir) -> bool:
    return task.config.verifier.mode == "separate"


def verifier_task(task: TaskDir, artifacts: Path, dest: Path) -> Path:
    """Lay out the verifier sandbox's task dir at ``dest`` (see the module doc)."""
    if dest.exists():
        shutil.rmtree(dest)
    env_name = task.config.verifier_environment_dir or (
        "tests" if (task.path / "tests" / "Dockerfile").is_file() else "environment")
    env_src = (task.path / env_name).resolve()
    if task.path.resolve() not in env_src.parents or not (env_src / "Dockerfile").is_file():
        raise ValueError(f"[verifier] environment {env_name!r}: no Dockerfile in a dir of the task")
    shutil.copytree(task.path, dest, ignore=lambda src, names: [
        n for n in names if Path(src) == task.path and n in ("environment", "solution", env_name)])
    shutil.copytree(env_src, dest / "environment")
    ctx = dest / "environment" / ARTIFACTS_CONTEXT
    if artifacts.is_dir():
        shutil.copytree(artifacts, ctx, symlinks=True)
    else:
        ctx.mkdir()
    dockerfile = dest / "environment" / "Dockerfile"
    workdir = parse_dockerfile(dockerfile).workdir
    if not any(ctx.iterdir()):  # nothing handed over (a build context drops empty dirs)
        ctx.rmdir()
    else:
        with dockerfile.open("a", encoding="utf-8") as f:
            f.write(f"\n# artifacts handed over from the agent's sandbox (environment_mode = separate)\n"
                    f"COPY {ARTIFACTS_CONTEXT}/ {workdir.rstrip('/')}/\n")
    raw = tomllib.loads((dest / "task.toml").read_text(encoding="utf-8"))
    raw.setdefault("verifier", {})["environment_mode"] = "shared"
    raw["verifier"].pop("environment", None)  # this sandbox *is* the verifier's environment
    (dest / "task.toml").write_text(tomli_w.dumps(raw), encoding="utf-8")
    return dest
