"""The kubernetes backend's runtime image (/opt/openforge): what its build context holds, that
the relocated interpreter runs the runner with the original prefix and venv hidden, and (with
a Docker engine) a real build whose tree a pod's initContainer command copies into a volume
that a task image then runs the runner from, as a non-root uid on a read-only root."""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.training.orchestrator.conftest import docker_client_with_base_image
from training.orchestrator.bwrap import bwrap_path
from training.orchestrator.runtime_image import (
    RUNTIME_DIR,
    dockerfile_text,
    plan_runtime,
    write_context,
)

PYVER = f"{sys.version_info.major}.{sys.version_info.minor}"
SITE = f"opt/openforge/python/lib/python{PYVER}/site-packages"
IMPORTS = ("import ssl, sqlite3, environments.runner.__main__, environments.harnesses.registry, "
           "environments.harnesses.react.loop; import importlib.util as u; "
           "assert u.find_spec('torch') is None; print('runtime ok', __import__('sys').executable)")


@pytest.fixture(scope="module")
def slim_plan() -> Any:
    return plan_runtime(slim=True, tools=False)


def test_dockerfile_copies_the_tree_onto_a_base_with_sh() -> None:
    assert dockerfile_text("openforge/base:bookworm") == (
        'FROM openforge/base:bookworm\nCOPY opt/ /opt/\nLABEL openforge.runtime="1"\n')
    assert dockerfile_text("busybox", "/srv/of").startswith("FROM busybox\nCOPY srv/ /srv/\n")


def test_slim_plan_holds_the_runner_and_its_deps_only(slim_plan: Any) -> None:
    paths = {arc for arc, _p in slim_plan.entries} | set(slim_plan.extra)
    assert "opt/openforge/repo/training/orchestrator/kubernetes/pod_entry.py" in paths
    assert "opt/openforge/repo/environments/runner/__main__.py" in paths
    # deny by default: no example task's oracle or tests, no test suite, no other package
    repo = [a for a in paths if a.startswith("opt/openforge/repo/")]
    assert not [a for a in repo if "/solution/" in a or a.endswith("/task.toml") or a.startswith((
        "opt/openforge/repo/tests/", "opt/openforge/repo/synthesis/"))]
    assert f"opt/openforge/python/lib/python{PYVER}/os.py" in paths
    assert f"{SITE}/pydantic/__init__.py" in paths and f"{SITE}/httpx/__init__.py" in paths
    assert f"{SITE}/PIL/ImageGrab.py" in paths  # the computer-use harness's screenshots
    if importlib.util.find_spec("playwright") is not None:
        assert f"{SITE}/playwright/async_api/__init__.py" in paths  # the browser-use harness
    for arc in paths:
        assert arc.startswith(RUNTIME_DIR.strip("/") + "/"), arc
        assert not any(part in (".git", ".openforge", ".venv", "__pycache__") for part in arc.split("/")[:4]), arc
        assert f"{SITE}/torch/" not in arc and not arc.startswith("opt/openforge/tools/"), arc
        assert f"python{PYVER}/test/" not in arc, arc
    if slim_plan.shared_libpython:
        wrapper = slim_plan.extra["opt/openforge/python/bin/python3"].decode()
        assert wrapper.startswith("#!/bin/sh") and "LD_LIBRARY_PATH" in wrapper and f"python{PYVER}" in wrapper
    assert slim_plan.bytes < 400 << 20  # measured: ~142 MB without the tools dir, ~332 MB with the GUI harnesses' Pillow and Playwright


def _hidden_host_python() -> list[str]:
    """bwrap args hiding where this interpreter and its venv really live."""
    args = []
    for path in {Path(sys.base_prefix).resolve(), Path(sys.prefix)}:
        top = Path("/", *path.parts[1:2])  # e.g. /root, /work
        args += ["--tmpfs", str(top)]
    return args


@pytest.mark.slow
def test_relocated_slim_runtime_runs_the_runner(slim_plan: Any, tmp_path: Path) -> None:
    if not bwrap_path():
        pytest.skip("bubblewrap not installed (apt-get install -y bubblewrap)")
    ctx = tmp_path / "ctx.tar"
    with ctx.open("wb") as fh:
        write_context(slim_plan, "openforge/base:bookworm", fh)
    root = tmp_path / "image"
    with tarfile.open(ctx) as tar:
        tar.extractall(root, filter="tar")
    assert (root / "Dockerfile").read_text().startswith("FROM openforge/base:bookworm")
    rt = root / "opt" / "openforge"
    argv = [bwrap_path(), "--dev-bind", "/", "/", *_hidden_host_python(),
            "--ro-bind", str(rt), RUNTIME_DIR, "--setenv", "PYTHONPATH", f"{RUNTIME_DIR}/repo",
            "--chdir", "/tmp", f"{RUNTIME_DIR}/python/bin/python3", "-P", "-c", IMPORTS]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"runtime ok {RUNTIME_DIR}/python/bin/python{PYVER}" in proc.stdout
    # the original prefix really was hidden: the host interpreter cannot start in there
    hidden = subprocess.run([bwrap_path(), "--dev-bind", "/", "/", *_hidden_host_python(), sys.executable, "-c", ""],
                            capture_output=True, text=True, timeout=60, check=False)
    assert hidden.returncode != 0


@pytest.fixture
def docker_client() -> Iterator[Any]:
    yield from docker_client_with_base_image("runtime image build test", timeout=600)


@pytest.mark.docker
@pytest.mark.slow
def test_built_runtime_image_serves_a_pod_the_way_the_manifest_says(slim_plan: Any, docker_client: Any) -> None:
    from training.orchestrator.config import get_orchestrator_settings
    from training.orchestrator.kubernetes.manifest import PodPlan, rollout_pod
    from training.orchestrator.runtime_image import build_runtime_image

    base = get_orchestrator_settings().base_image
    tag = f"openforge-runtime:test-{uuid.uuid4().hex[:10]}"
    volume = f"openforge-runtime-test-{uuid.uuid4().hex[:10]}"
    built = build_runtime_image(docker_client, tag, base=base, plan=slim_plan)
    try:
        print(f"slim runtime image: {built.image_bytes / 1e6:.0f} MB (context {built.context_bytes / 1e6:.0f} MB), "
              f"built in {built.seconds:.0f}s")
        assert built.image_bytes > built.context_bytes * 0.5
        pod = rollout_pod(PodPlan(name="p", image=base, workdir="/app", labels={}, secret_name="p",
                                  control_url="http://127.0.0.1:1"),
                          namespace="ns", owner=None, runtime_image=tag, runtime_dir=RUNTIME_DIR,
                          runtime_python=f"{RUNTIME_DIR}/python/bin/python3")
        init = next(c for c in pod["spec"]["initContainers"] if c["name"] == "runtime")
        sandbox = pod["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in sandbox["env"] if "value" in e}
        uid = pod["spec"]["securityContext"].get("runAsUser", 65532)
        mount = init["volumeMounts"][0]["mountPath"]
        # the kubelet's fsGroup makes the emptyDir writable by the pod's uid; a fresh volume is root's
        docker_client.containers.run(base, ["chown", f"{uid}:{uid}", mount], remove=True, network_mode="none",
                                     volumes={volume: {"bind": mount, "mode": "rw"}})
        docker_client.containers.run(tag, init["command"], remove=True, network_mode="none", user=str(uid),
                                     volumes={volume: {"bind": mount, "mode": "rw"}})
        out = docker_client.containers.run(
            base, [sandbox["command"][0], "-P", "-c", IMPORTS], remove=True, network_mode="none", user=str(uid),
            read_only=True, working_dir="/tmp", tmpfs={"/tmp": ""}, environment={"PYTHONPATH": env["PYTHONPATH"]},
            volumes={volume: {"bind": RUNTIME_DIR, "mode": "ro"}})
        assert b"runtime ok" in out
    finally:
        from docker.errors import NotFound

        with contextlib.suppress(NotFound):
            docker_client.volumes.get(volume).remove(force=True)
        with contextlib.suppress(NotFound):
            docker_client.images.remove(tag, force=True)
