"""The ``local`` sandbox backend: one process tree per rollout on this host.

Isolation is bubblewrap when ``bwrap`` is available (loopback-only network, own PID/IPC/UTS
namespaces, read-only root, no capabilities; the proxy is reached through a unix-socket
relay — isolation ``bubblewrap``; a non-loopback proxy URL needs the host network —
``bubblewrap+share-net``), else a plain process in its own session (``process``: no
isolation, Harbor paths stay relative to the sandbox dir and the runner gets
``OPENFORGE_SANDBOX_ROOT``/``LOGS_DIR``/``TESTS_DIR``/``WORKSPACE``).

The task's Dockerfile is read, not built: WORKDIR, ENV and COPY/ADD of build-context
files are honoured; every other instruction is named in the handle's notes (and the
rollout's result) as not honoured.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import shutil
import subprocess
import time
from pathlib import Path, PurePosixPath

from environments.records import ErrorKind, RolloutSpec
from openforge.settings import get_settings
from training.orchestrator.backend import SandboxError, SandboxExit, SandboxHandle
from training.orchestrator.bwrap import BwrapPlan, Mount, build_argv, bwrap_path
from training.orchestrator.bytecode import ensure_runtime_bytecode
from training.orchestrator.config import get_orchestrator_settings
from training.orchestrator.dockerfile import DockerfileInfo, parse_dockerfile
from training.orchestrator.follow import RunnerFollower, stream_lines
from training.orchestrator.layout import (
    SandboxDirs,
    copy_tests,
    load_and_lay_out,
    remove_sandbox,
)
from training.orchestrator.limits import Limits, SandboxCgroup, Watchdog, detect_mode
from training.orchestrator.procs import all_sandbox_ids, kill_tree, sandbox_pids
from training.orchestrator.relay import SANDBOX_RELAY_DIR, HostRelays, loopback_target
from training.orchestrator.runtime import (
    REPO_ROOT,
    runner_command,
    sandbox_env,
    sandbox_python,
    with_relay,
)
from training.orchestrator.spawn import SpawnedProcess, spawn
from training.orchestrator.task_support import check_supported, not_honoured, task_env

log = logging.getLogger(__name__)

SANDBOX_HOME = "/tmp/home"


def _essential_paths() -> list[Path]:
    """Host paths the runner needs inside the sandbox (a WORKDIR must not hide them)."""
    from training.orchestrator.sandbox_fs import runtime_view

    return [Path(p) for p in runtime_view().binds]


def _stage_copies(info: DockerfileInfo, context: Path, dirs: SandboxDirs, workdir: str) -> list[str]:
    """Place COPY/ADD results: inside WORKDIR into the workspace, elsewhere under files/.

    Returns the absolute destinations staged under files/ (bound later); problems are
    appended to ``info.unhonoured``.
    """
    staged: list[str] = []
    for op in info.copies:
        matches: list[Path] = []
        for src in op.sources:
            found = sorted(glob.glob(str(context / src)))
            if not found:
                info.unhonoured.append(f"{op.line} (source {src!r} not in the build context)")
            matches += [Path(f) for f in found]
        if not matches:
            continue
        dest_is_dir = op.dest.endswith("/") or len(matches) > 1 or matches[0].is_dir()
        dest = PurePosixPath(op.dest.rstrip("/") or "/")
        for src in matches:
            target = dest / src.name if dest_is_dir and not src.is_dir() else dest
            rel_wd = _relative_to(target, PurePosixPath(workdir))
            host = dirs.workspace / rel_wd if rel_wd is not None else dirs.files / str(target).lstrip("/")
            host.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, host, dirs_exist_ok=True)
            else:
                shutil.copy2(src, host)
            if rel_wd is None:
                staged.append(str(target))
    return staged


def _relative_to(path: PurePosixPath, base: PurePosixPath) -> PurePosixPath | None:
    try:
        return path.relative_to(base)
    except ValueError:
        return None


def _staged_mounts(dirs: SandboxDirs) -> list[Mount]:
    """One mount per staged entry, as shallow as the host allows (see bwrap module doc)."""
    mounts: list[Mount] = []

    def walk(staged: Path, dest: Path) -> None:
        for child in sorted(staged.iterdir()):
            target = dest / child.name
            if child.is_dir() and target.is_dir() and not target.is_symlink() and str(target) != "/":
                walk(child, target)
            else:
                mounts.append(Mount(child, str(target), writable=True))

    if dirs.files.exists():
        walk(dirs.files, Path("/"))
    return mounts


class LocalBackend:
    """Sandboxes as local process trees (bubblewrap where available)."""

    name = "local"

    def __init__(self, *, isolation: str | None = None, rollouts_dir: Path | None = None) -> None:
        mode = isolation or get_orchestrator_settings().local_isolation
        if mode == "auto":
            mode = "bubblewrap" if bwrap_path() else "process"
        if mode == "bubblewrap" and not bwrap_path():
            raise SandboxError("local backend: bubblewrap requested but `bwrap` is not installed (apt-get install -y bubblewrap)")
        self.mode = mode
        self.rollouts_dir = rollouts_dir or get_settings().rollouts_dir
        self._relays: HostRelays | None = None
        self._handles: dict[str, SandboxHandle] = {}
        self._started: set[str] = set()
        #: How memory/CPU/pids are enforced here (limits.py): v2 | v1 | watchdog.
        self.limits_mode = detect_mode()
        #: The runtime packages' bytecode (bytecode.py), compiled once before the first sandbox.
        self._bytecode: asyncio.Future[bool] | None = None

    async def _ensure_bytecode(self) -> None:
        if self._bytecode is None:
            self._bytecode = asyncio.ensure_future(ensure_runtime_bytecode(sandbox_python(), REPO_ROOT))
        await asyncio.shield(self._bytecode)  # one compile for concurrent starts, even if one is cancelled

    # -- start -----------------------------------------------------------------------
    async def start(self, spec: RolloutSpec) -> SandboxHandle:
        t0 = time.monotonic()
        self._started.add(spec.rollout_id)
        await self._ensure_bytecode()
        task, base, dirs = await asyncio.to_thread(load_and_lay_out, spec, self.rollouts_dir)
        handle = SandboxHandle(
            rollout_id=spec.rollout_id, backend=self.name, isolation=self.mode, root=str(base), logs_dir=str(dirs.logs)
        )
        self._handles[spec.rollout_id] = handle
        try:
            return await self._launch(spec, task, dirs, handle, t0)
        except BaseException:
            await self.cleanup(handle)
            raise

    async def _launch(self, spec, task, dirs, handle, t0):
        handle.state.update(dirs=dirs, task_dir=task.path, spec=spec, storage_mb=int(task.config.environment.storage_mb))
        check_supported(task, self.name)
        info = (
            await asyncio.to_thread(parse_dockerfile, task.dockerfile)
            if task.dockerfile.is_file()
            else DockerfileInfo()
        )
        # The runner takes the agent/verifier budgets from task.toml; the rollout's wall
        # clock (spec.timeout_sec) is the scheduler's, so a hanging harness ends as `timeout`.
        agent_timeout = verifier_timeout = None
        python = sandbox_python()
        oracle = spec.harness == "oracle"
        try:
            if self.mode == "bubblewrap":
                argv, env, cwd = await self._bwrap_command(spec, task.path, dirs, info, python, agent_timeout, verifier_timeout, oracle)
            else:
                argv, env, cwd = self._process_command(spec, dirs, info, python, agent_timeout, verifier_timeout, oracle)
        except SandboxError:
            raise
        except OSError as exc:
            raise SandboxError(f"sandbox setup failed: {exc}", kind=ErrorKind.start_failed) from exc
        env.update(task_env(task))
        handle.notes.extend(f"not honoured: {u}" for u in [*info.unhonoured, *not_honoured(task, self.name)])
        for note in handle.notes:
            log.info("rollout %s: %s", spec.rollout_id, note)
        res = task.config.environment
        limits = Limits(memory_mb=int(res.memory_mb), cpus=float(res.cpus))
        cgroup: SandboxCgroup | None = None
        if self.limits_mode != "watchdog":
            try:
                # A few mkdir/write syscalls: cheaper inline than a thread hop under load.
                cgroup = SandboxCgroup.create(f"openforge-{spec.rollout_id}", limits, self.limits_mode)
            except OSError as exc:
                handle.notes.append(f"limits: cgroup {self.limits_mode} unavailable ({exc}); watchdog")
        handle.state["cgroup"] = cgroup
        handle.notes.append(f"limits: {cgroup.mode if cgroup else 'watchdog'} (memory {limits.memory_mb} MiB, "
                            f"cpus {limits.cpus:g}, pids {limits.pids}, storage {res.storage_mb} MiB)")
        t1 = time.monotonic()
        runner_log = dirs.runner_log.open("ab")
        try:
            # fork/exec in a worker thread, exit seen through a pidfd: the loop that starts the
            # wave's other sandboxes and relays their model calls is never held up (spawn.py)
            proc = await spawn(cgroup.wrap(argv) if cgroup else argv, cwd=cwd, env=env, stderr=runner_log,
                               limit=1 << 22)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot launch {argv[0]}: {exc}", kind=ErrorKind.start_failed) from exc
        finally:
            runner_log.close()
        handle.state["proc"] = proc

        def exceeded(kind: str, detail: str) -> None:
            handle.state["limit"] = (kind, detail)
            kill_tree(proc.pid if proc.returncode is None else None, spec.rollout_id)
            if cgroup is not None:
                cgroup.kill()

        watchdog = Watchdog(storage_mb=int(res.storage_mb), disk=[dirs.workspace, dirs.logs, dirs.files, dirs.home],
                            limits=limits, pids_fn=None if cgroup else (lambda: sandbox_pids(spec.rollout_id)),
                            on_exceeded=exceeded)
        watchdog.start()
        handle.state["watchdog"] = watchdog
        handle.timings["setup"] = t1 - t0
        handle.timings["start_latency"] = time.monotonic() - t0
        return handle

    async def _bwrap_command(self, spec, task_path, dirs, info, python, agent_timeout, verifier_timeout, oracle):
        workdir = info.workdir if info.workdir_set else "/app"
        for ess in _essential_paths():
            if workdir == "/" or ess == Path(workdir) or Path(workdir) in ess.parents:
                info.unhonoured.append(f"WORKDIR {workdir} (would hide {ess}); using /app")
                workdir = "/app"
                break
        staged = await asyncio.to_thread(_stage_copies, info, task_path / "environment", dirs, workdir)
        uid = get_orchestrator_settings().sandbox_uid
        plan = BwrapPlan(uid=uid or None, tmp_size_mb=self._handles[spec.rollout_id].state.get("storage_mb"))
        settings = get_settings()
        # Deny by default: none of these is bound; should one lie under a bound runtime dir
        # (OPENFORGE_HOME inside the venv, say) it is covered by an empty tmpfs.
        plan.hidden = [str(settings.home_dir), str(settings.tasks_dir), str(settings.rollouts_dir), str(task_path)]
        plan.dirs = [SANDBOX_HOME]
        plan.mounts = [
            Mount(dirs.task, "/task"),
            Mount(dirs.workspace, workdir, writable=True),
            Mount(dirs.logs, "/logs", writable=True),
            Mount(dirs.tests, "/tests", writable=True),
        ]
        if oracle:
            plan.mounts.append(Mount(dirs.solution, "/solution"))
        if staged:
            plan.mounts += _staged_mounts(dirs)
        cmd = runner_command(
            spec, python=python, task_dir="/task", workspace=workdir, logs_dir="/logs", tests_dir="/tests",
            solution_dir="/solution" if oracle else None, agent_timeout=agent_timeout, verifier_timeout=verifier_timeout,
            agent_jail="userns",
        )
        target = loopback_target(spec.base_url)
        isolation = "bubblewrap"
        if target is not None:
            if self._relays is None:
                self._relays = HostRelays()
            sock = await self._relays.ensure(*target)
            plan.mounts.append(Mount(self._relays.dir, SANDBOX_RELAY_DIR))
            cmd = with_relay(cmd, python=python, host=target[0], port=target[1], unix_path=f"{SANDBOX_RELAY_DIR}/{sock.name}")
        elif spec.base_url:
            plan.share_net = True
            isolation = "bubblewrap+share-net"
        self._handles[spec.rollout_id].isolation = isolation
        home = info.env.get("HOME", SANDBOX_HOME)
        if home != SANDBOX_HOME:
            plan.dirs.append(home)
        env = sandbox_env(spec, dockerfile_env=info.env, home=home)
        argv = build_argv(plan, chdir=workdir, command=cmd)
        return argv, env, str(dirs.sandbox)

    def _process_command(self, spec, dirs, info, python, agent_timeout, verifier_timeout, oracle):
        # Plain process: only COPYs into WORKDIR can be honoured (relative to the workspace).
        workdir = info.workdir if info.workdir_set else "/app"
        keep = []
        for op in info.copies:
            if _relative_to(PurePosixPath(op.dest.rstrip("/") or "/"), PurePosixPath(workdir)) is not None:
                keep.append(op)
            else:
                info.unhonoured.append(f"{op.line} (absolute destination; plain-process sandbox)")
        info.copies = keep
        _stage_copies(info, dirs.task / "environment", dirs, workdir)
        if info.workdir_set:
            info.unhonoured.append(f"WORKDIR {workdir} (plain-process sandbox: workspace dir used)")
        cmd = runner_command(
            spec, python=python, task_dir=str(dirs.task), workspace=str(dirs.workspace), logs_dir=str(dirs.logs),
            tests_dir=str(dirs.tests), solution_dir=str(dirs.solution) if oracle else None,
            agent_timeout=agent_timeout, verifier_timeout=verifier_timeout, agent_jail="none",
        )
        extra = {
            "OPENFORGE_SANDBOX_ROOT": str(dirs.sandbox),
            "LOGS_DIR": str(dirs.logs),
            "TESTS_DIR": str(dirs.tests),
            "WORKSPACE": str(dirs.workspace),
        }
        env = sandbox_env(spec, dockerfile_env=info.env, home=str(dirs.home), extra=extra)
        return cmd, env, str(dirs.workspace)

    # -- follow ----------------------------------------------------------------------
    async def wait(self, handle: SandboxHandle) -> SandboxExit:
        proc: SpawnedProcess = handle.state["proc"]
        dirs: SandboxDirs = handle.state["dirs"]
        task_dir: Path = handle.state["task_dir"]
        t0 = time.monotonic()

        async def agent_done(step: str | None = None) -> None:
            await asyncio.to_thread(copy_tests, task_dir, dirs.tests, step=step)

        follower = RunnerFollower(dirs.runner_log, agent_done)
        handle.state["follower"] = follower
        try:
            assert proc.stdout is not None
            await follower.consume(stream_lines(proc.stdout))
            code = await proc.wait()
        finally:
            follower.close()
        timings = {"run": time.monotonic() - t0}
        if follower.agent_done_at is not None:
            timings["agent"] = follower.agent_done_at - t0
        watchdog: Watchdog | None = handle.state.get("watchdog")
        if watchdog is not None:
            await watchdog.stop()
        cgroup: SandboxCgroup | None = handle.state.get("cgroup")
        limit, detail = handle.state.get("limit") or (None, None)
        if limit is None and cgroup is not None and await asyncio.to_thread(cgroup.oom_kills):
            limit, detail = ErrorKind.oom.value, f"the sandbox's cgroup hit memory_mb ({cgroup.mode} OOM kill)"
        killed = code == -9 and not handle.state.get("cancelled", False)
        return SandboxExit(
            exit_code=code, report=follower.report, oom=limit == ErrorKind.oom.value,
            cancelled=handle.state.get("cancelled", False), limit=limit,
            error=detail or follower.report_error or ("runner killed by SIGKILL" if killed else None), timings=timings,
        )

    async def cancel(self, handle: SandboxHandle) -> None:
        handle.state["cancelled"] = True
        proc: SpawnedProcess | None = handle.state.get("proc")
        pgid = proc.pid if proc is not None and proc.returncode is None else None
        await asyncio.to_thread(kill_tree, pgid, handle.rollout_id)
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                log.warning("rollout %s: sandbox process %s did not die", handle.rollout_id, proc.pid)

    async def logs(self, handle: SandboxHandle) -> str:
        path = Path(handle.root) / "runner.log"
        return await asyncio.to_thread(lambda: path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")

    async def cleanup(self, handle: SandboxHandle) -> None:
        proc: SpawnedProcess | None = handle.state.get("proc")
        pgid = proc.pid if proc is not None and proc.returncode is None else None
        if pgid is not None or sandbox_pids(handle.rollout_id):
            await asyncio.to_thread(kill_tree, pgid, handle.rollout_id)
            if proc is not None:
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    pass
        watchdog: Watchdog | None = handle.state.pop("watchdog", None)
        if watchdog is not None:
            await watchdog.stop()
        cgroup: SandboxCgroup | None = handle.state.pop("cgroup", None)
        if cgroup is not None:
            await asyncio.to_thread(cgroup.remove)
        dirs: SandboxDirs | None = handle.state.get("dirs")
        if dirs is None:
            dirs = SandboxDirs(Path(handle.root))
        await asyncio.to_thread(remove_sandbox, dirs)
        self._handles.pop(handle.rollout_id, None)

    async def live_sandboxes(self) -> list[str]:
        """Sandbox dirs under rollouts_dir, and processes of sandboxes this backend started."""

        def scan() -> list[str]:
            live = set()
            if self.rollouts_dir.exists():
                live |= {p.parent.name for p in self.rollouts_dir.glob("*/sandbox")}
            live |= all_sandbox_ids() & self._started
            return sorted(live)

        return await asyncio.to_thread(scan)

    async def aclose(self) -> None:
        if self._bytecode is not None and not self._bytecode.done():
            self._bytecode.cancel()
        for handle in list(self._handles.values()):
            await self.cleanup(handle)
        if self._relays is not None:
            await self._relays.aclose()
            self._relays = None
