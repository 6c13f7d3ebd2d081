"""An executor for the fake kubelet that really runs a rollout pod on this host, under
bubblewrap, the way the ``local`` backend runs a sandbox (a test-side stand-in for a node's
container runtime; product code never imports it).

What it translates from the pod spec:

- **image** → a task dir (``images``: image ref → task dir, e.g. from
  ``ContentImages``): the task's Dockerfile ENV becomes the container's image env and the
  ``workdir`` initContainer (which copies the image's WORKDIR into an emptyDir) is replayed
  by staging the Dockerfile's COPYs, as the local backend does (COPYs elsewhere are bound
  at their absolute paths);
- **runtime** initContainer → nothing to copy: the host's runtime (interpreter, venv, this
  checkout) is visible read-only inside bubblewrap, so ``<runtime_dir>/python/bin/python3``
  becomes this interpreter and ``<runtime_dir>/repo`` this checkout (argv and env values);
- **emptyDir volumes** → fresh host dirs bound at their mount paths (``/tmp`` and ``/run``
  are bubblewrap's own tmpfs);
- **env** → ``value``s, ``secretKeyRef`` read from the fake's store (``secrets``),
  ``fieldRef: metadata.name``;
- the pod network → the host's (``--share-net``) when no NetworkPolicy selects the pod;
  with one (the backend's per-run policy), a loopback-only network plus a unix-socket relay
  (``sandbox_init.py``) to each loopback ``ipBlock``/port the policy allows — the proxy and
  the control endpoint — as a CNI enforcing the policy would (``policies`` lookup);
- **limits** → what a kubelet enforces: the container's ``limits.memory``/``cpu`` and a pod
  pids limit (1024) in a cgroup (``training.orchestrator.limits``; an OOM kill →
  ``OOMKilled``), and ``limits.ephemeral-storage`` polled over the pod's volumes (past it
  the pod is ``Evicted``, as a kubelet evicts it).

Stdout and stderr go to the pod log line by line. Cancellation (deadline, deletion,
injected failure) sends SIGTERM to the process group, SIGKILL after the pod's
``terminationGracePeriodSeconds``; the host dirs are removed afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openforge.settings import get_settings
from testkit.fakes.kubernetes.kubelet import ExecResult
from testkit.fakes.kubernetes.quantity import parse_quantity
from training.orchestrator.bwrap import BwrapPlan, Mount, build_argv, bwrap_path
from training.orchestrator.dockerfile import DockerfileInfo, parse_dockerfile
from training.orchestrator.layout import SandboxDirs, remove_sandbox
from training.orchestrator.limits import Limits, SandboxCgroup, Watchdog, detect_mode
from training.orchestrator.local import _essential_paths, _stage_copies, _staged_mounts
from training.orchestrator.relay import SANDBOX_RELAY_DIR, HostRelays
from training.orchestrator.runtime import (
    BASE_PATH,
    REPO_ROOT,
    SANDBOX_INIT,
    sandbox_python,
)

log = logging.getLogger(__name__)

#: emptyDirs bubblewrap already provides as tmpfs.
TMPFS_MOUNTS = ("/tmp", "/run")

SecretLookup = Callable[[str, str], dict[str, Any] | None]
PolicyLookup = Callable[[str], list[dict[str, Any]]]
LOOPBACK_CIDRS = ("127.0.0.1/32", "127.0.0.0/8", "::1/128")


def _egress_ports(pod: dict[str, Any], policies: list[dict[str, Any]]) -> tuple[bool, list[int]]:
    """(some policy selects the pod, loopback TCP ports its egress allows)."""
    labels = pod["metadata"].get("labels") or {}
    selected, ports = False, set()
    for pol in policies:
        match = ((pol.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
        if not all(labels.get(k) == v for k, v in match.items()):
            continue
        selected = True
        for rule in pol["spec"].get("egress") or []:
            if any((t.get("ipBlock") or {}).get("cidr") in LOOPBACK_CIDRS for t in rule.get("to") or []):
                ports |= {int(p["port"]) for p in rule.get("ports") or [] if p.get("protocol", "TCP") == "TCP"}
    return selected, sorted(ports)


def _limits(container: dict[str, Any]) -> tuple[Limits, int | None]:
    lim = (container.get("resources") or {}).get("limits") or {}
    mem = int(parse_quantity(lim["memory"]) / (1 << 20)) if "memory" in lim else 2048
    cpus = float(parse_quantity(lim["cpu"])) if "cpu" in lim else 1.0
    storage = int(parse_quantity(lim["ephemeral-storage"]) / (1 << 20)) if "ephemeral-storage" in lim else None
    return Limits(memory_mb=mem, cpus=cpus), storage


def _secret_value(secret: dict[str, Any] | None, key: str) -> str | None:
    if secret is None:
        return None
    if key in (secret.get("stringData") or {}):
        return str(secret["stringData"][key])
    raw = (secret.get("data") or {}).get(key)
    return base64.b64decode(raw).decode() if raw is not None else None


class LocalPodExecutor:
    """``executor(pod, log) -> ExecResult`` for :class:`SimulatedKubelet` (see the module doc)."""

    def __init__(self, images: dict[str, Path], *, secrets: SecretLookup, policies: PolicyLookup | None = None,
                 runtime_dir: str = "/opt/openforge",
                 runtime_python: str = "/opt/openforge/python/bin/python3", work_root: Path | None = None) -> None:
        if not bwrap_path():
            raise RuntimeError("LocalPodExecutor needs bubblewrap (apt-get install -y bubblewrap)")
        self.images = dict(images)
        self.secrets = secrets
        self.policies = policies
        self.limits_mode = detect_mode()
        self._relays: HostRelays | None = None
        self.runtime_dir = runtime_dir.rstrip("/")
        self.runtime_python = runtime_python
        self.work_root = work_root or Path(tempfile.gettempdir())
        self.runs = 0
        #: Drop the container's output (a node whose logs are lost): tests the proxy-record path.
        self.drop_logs = False

    # -- translation -------------------------------------------------------------------
    def _host_value(self, value: str) -> str:
        """Runtime paths of the pod → this host's runtime."""
        if value == self.runtime_python:
            return sandbox_python()
        value = value.replace(f"{self.runtime_dir}/repo", str(REPO_ROOT))
        tools = os.environ.get("OPENFORGE_TOOLS_DIR", "/opt/openforge-tools")
        return value.replace(f"{self.runtime_dir}/tools", tools)

    def _env(self, pod: dict[str, Any], container: dict[str, Any], image_env: dict[str, str]) -> dict[str, str]:
        ns = pod["metadata"]["namespace"]
        env = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
        env.update(image_env)
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = self._host_value(str(item["value"]))
                continue
            src = item.get("valueFrom") or {}
            if "secretKeyRef" in src:
                ref = src["secretKeyRef"]
                value = _secret_value(self.secrets(ns, ref["name"]), ref["key"])
                if value is None and not ref.get("optional"):
                    raise RuntimeError(f"secret {ref['name']}/{ref['key']} missing")
                if value is not None:
                    env[item["name"]] = value
            elif "fieldRef" in src and src["fieldRef"].get("fieldPath") == "metadata.name":
                env[item["name"]] = pod["metadata"]["name"]
        return env

    def _image(self, image: str, workdir: str, stage: SandboxDirs) -> tuple[dict[str, str], list[Mount], list[str]]:
        """(image env, mounts of COPYs outside WORKDIR, notes) of ``image`` — from its task's Dockerfile."""
        task = self.images.get(image)
        if task is None:
            return {}, [], [f"fake kubelet: image {image} unknown to the local executor (empty image)"]
        dockerfile = task / "environment" / "Dockerfile"
        info = parse_dockerfile(dockerfile) if dockerfile.is_file() else DockerfileInfo()
        _stage_copies(info, task / "environment", stage, workdir)
        return dict(info.env), _staged_mounts(stage), []

    # -- run -----------------------------------------------------------------------------
    async def __call__(self, pod: dict[str, Any], log_line: Callable[[str], None]) -> ExecResult:
        self.runs += 1
        container = pod["spec"]["containers"][0]
        workdir = container.get("workingDir") or "/"
        root = Path(tempfile.mkdtemp(prefix=f"{pod['metadata']['name']}-", dir=self.work_root))
        stage = SandboxDirs(root)
        proc: asyncio.subprocess.Process | None = None
        try:
            volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
            vol_dirs: dict[str, Path] = {}
            for name, vol in volumes.items():
                if "emptyDir" in vol:
                    vol_dirs[name] = root / "volumes" / name
                    vol_dirs[name].mkdir(parents=True)
            # The container runs as its securityContext says (container over pod), as a kubelet does.
            run_as = {**(pod["spec"].get("securityContext") or {}), **(container.get("securityContext") or {})}
            selected, ports = _egress_ports(pod, self.policies(pod["metadata"]["namespace"]) if self.policies else [])
            plan = BwrapPlan(share_net=not selected, uid=run_as.get("runAsUser") or None)
            workdir_volume = next((m["name"] for m in container.get("volumeMounts") or []
                                   if m["mountPath"].rstrip("/") == workdir.rstrip("/")), None)
            if workdir_volume is not None:
                # the `workdir` initContainer: the image's WORKDIR content into the emptyDir
                stage.workspace.mkdir(parents=True, exist_ok=True)
                stage.files.mkdir(parents=True, exist_ok=True)
                image_env, copy_mounts, notes = await asyncio.to_thread(self._image, container["image"], workdir, stage)
                shutil.copytree(stage.workspace, vol_dirs[workdir_volume], dirs_exist_ok=True)
            else:
                image_env, copy_mounts, notes = {}, [], []
            for note in notes:
                log_line(note)
            for m in container.get("volumeMounts") or []:
                path = m["mountPath"]
                if m["name"] == "runtime" or path in TMPFS_MOUNTS or m["name"] not in vol_dirs:
                    continue
                plan.mounts.append(Mount(vol_dirs[m["name"]], path, writable=not m.get("readOnly", False)))
            plan.mounts += copy_mounts
            settings = get_settings()
            if any(e == settings.home_dir or settings.home_dir in e.parents for e in _essential_paths()):
                plan.hidden = [str(settings.tasks_dir), str(settings.rollouts_dir)]
            else:
                plan.hidden = [str(settings.home_dir)]
            plan.hidden += [str(t) for t in self.images.values()]  # the task bank: tests live there
            env = self._env(pod, container, image_env)
            plan.dirs = [env.get("HOME", "/tmp/home")] if env.get("HOME", "").startswith("/tmp/") else []
            command = [self._host_value(a) for a in (container.get("command") or []) + (container.get("args") or [])]
            if selected and ports:
                if self._relays is None:
                    self._relays = HostRelays()
                relay = [sandbox_python(), "-P", str(SANDBOX_INIT)]
                for port in ports:
                    sock = await self._relays.ensure("127.0.0.1", port)
                    relay += ["--listen", f"127.0.0.1:{port}", "--unix", f"{SANDBOX_RELAY_DIR}/{sock.name}"]
                plan.mounts.append(Mount(self._relays.dir, SANDBOX_RELAY_DIR))
                command = [*relay, "--", *command]
            limits, storage_mb = _limits(container)
            cgroup = None
            if self.limits_mode != "watchdog":
                cgroup = await asyncio.to_thread(SandboxCgroup.create, f"fake-kubelet-{root.name}", limits,
                                                 self.limits_mode)
            argv = build_argv(plan, chdir=workdir, command=command)
            if cgroup is not None:
                argv = cgroup.wrap(argv)
            proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.STDOUT, start_new_session=True,
                                                        limit=1 << 22)
            evicted: list[str] = []

            def evict(_kind: str, detail: str) -> None:
                evicted.append(f"Pod ephemeral local storage usage exceeds the total limit of containers ({detail})")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                if cgroup is not None:
                    cgroup.kill()

            watchdog = Watchdog(storage_mb=storage_mb, disk=[root / "volumes"], limits=None, pids_fn=None,
                                on_exceeded=evict)
            watchdog.start()
            try:
                assert proc.stdout is not None
                while raw := await proc.stdout.readline():
                    if not self.drop_logs:
                        log_line(raw.decode("utf-8", errors="replace").rstrip("\n"))
                code = await proc.wait()
            finally:
                await watchdog.stop()
                oom = bool(cgroup is not None and await asyncio.to_thread(cgroup.oom_kills))
                if cgroup is not None:
                    await asyncio.to_thread(cgroup.remove)
            if evicted:
                return ExecResult(exit_code=137, pod_reason="Evicted", message=evicted[0])
            return ExecResult(exit_code=code if code >= 0 else 128 - code, oom=oom)
        except asyncio.CancelledError:
            if proc is not None and proc.returncode is None:
                await self._stop(proc, int(pod["spec"].get("terminationGracePeriodSeconds") or 5))
            raise
        finally:
            await asyncio.to_thread(self._remove, root)

    async def _stop(self, proc: asyncio.subprocess.Process, grace: int) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # bwrap --die-with-parent takes the sandbox with it
            except (ProcessLookupError, PermissionError):
                pass
            await proc.wait()

    @staticmethod
    def _remove(root: Path) -> None:
        remove_sandbox(SandboxDirs(root))
        shutil.rmtree(root, ignore_errors=True)
