"""The ``docker`` sandbox backend: one container per rollout on a real Docker engine.

- image: the task's ``environment/Dockerfile`` built once per content hash, unpullable
  ``FROM`` images mapped to the local base image (``training.orchestrator.images``); an
  image-only task's ``[environment] docker_image`` is that ``FROM`` (same aliasing);
  ``[environment] workdir`` overrides the image's WORKDIR; compose tasks run their ``main``
  service as the sandbox and the other services as sidecars in its network namespace
  (``training.orchestrator.compose``);
- runtime: the runner and our package come from the host, bind-mounted read-only at their
  own paths (the Python prefix, the virtualenv, the repo, the harness tools dir), so task
  images need no OpenForge install (they must be glibc-based, like the base image);
- isolation (``docker``): ``network_mode=none`` — loopback only; the proxy is reached
  through the unix-socket relay bound at ``/run/openforge`` (a non-loopback proxy URL
  needs ``network_mode=host``: isolation ``docker+host-net``); read-only root filesystem
  with tmpfs ``/tmp``, ``/run``, ``/var/tmp``; WORKDIR on an anonymous volume (seeded with
  the image's files, writable); ``cap_drop=ALL``, ``no-new-privileges``, CPU/memory/pids
  limits from task.toml, ``init`` reaping zombies;
- user: not root. As root on the host the agent is ``OPENFORGE_SANDBOX_UID`` (1000): the
  image gets a last layer chowning WORKDIR to it (``images.agent_user_layer``) and its
  bind-mounted ``/logs`` and ``/tests`` are handed over; as anyone else it runs as us. A
  task's ``[agent] user`` / ``[verifier] user`` (not root for the agent) are what the root
  runner switches to (``task_support.task_users``; WORKDIR then keeps the image's owner);
- Harbor paths: ``/task`` (ro), ``/logs``, ``/tests`` and ``/solution`` (oracle only) are
  binds of the rollout's host dirs. Tests are copied into the bound ``/tests`` on the
  runner's phase line (``put_archive`` cannot write into a read-only root or a tmpfs);
- containers are labelled ``openforge.sandbox`` and always removed with their volumes.

Every Docker SDK call runs in the backend's own thread pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from environments.records import ErrorKind, RolloutSpec
from openforge.aio import outlast
from openforge.settings import get_settings
from training.orchestrator.backend import SandboxError, SandboxExit, SandboxHandle
from training.orchestrator.compose import (
    ComposeError,
    ComposePlan,
    Service,
    read_compose,
    start_order,
)
from training.orchestrator.config import get_orchestrator_settings
from training.orchestrator.follow import RunnerFollower
from training.orchestrator.images import (
    ImageBuildError,
    TaskImage,
    build_sidecar_image,
    build_task_image,
    environment_key,
    resolve_from,
)
from training.orchestrator.layout import (
    SandboxDirs,
    copy_tests,
    load_and_lay_out,
    remove_sandbox,
)
from training.orchestrator.limits import DEFAULT_PIDS, Watchdog
from training.orchestrator.relay import SANDBOX_RELAY_DIR, HostRelays, loopback_target
from training.orchestrator.runtime import (
    SANDBOX_HOSTNAME,
    SANDBOX_INIT,
    runner_command,
    sandbox_env,
    with_relay,
)
from training.orchestrator.sandbox_fs import runtime_view
from training.orchestrator.task_support import (
    check_supported,
    not_honoured,
    task_env,
    task_users,
)

log = logging.getLogger(__name__)

LABEL = "openforge.sandbox"
_END = object()


def _client(timeout: int = 60, pool: int = 64) -> Any:
    import docker

    host = get_orchestrator_settings().docker_host
    if host:
        return docker.DockerClient(base_url=host, timeout=timeout, max_pool_size=pool)
    return docker.from_env(timeout=timeout, max_pool_size=pool)


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers and the base image exists, else why not."""
    try:
        client = _client(timeout=5, pool=2)
    except Exception as exc:  # noqa: BLE001 - any failure means "not usable"
        return f"no Docker engine: {exc} (start one with scripts/start-dockerd.sh)"
    try:
        client.ping()
        base = get_orchestrator_settings().base_image
        try:
            client.images.get(base)
        except Exception:  # noqa: BLE001
            return f"base image {base} missing (build it with scripts/build-base-image.sh)"
        return None
    except Exception as exc:  # noqa: BLE001
        return f"Docker engine not reachable: {exc} (start one with scripts/start-dockerd.sh)"
    finally:
        client.close()


def runtime_mounts() -> list[str]:
    """Host paths the runner needs, bind-mounted read-only at the same place: the deny-by-
    default runtime view (``sandbox_fs.runtime_view``: interpreter, venv, tools dir, the
    checkout's runtime packages — never the checkout, its data dir or its task dirs)."""
    return list(runtime_view().binds)


#: Capabilities the container keeps: the runner (root in the container) starts the harness
#: as the agent uid, kills that uid's processes at agent_done and reads what it left.
RUNNER_CAPS = ["SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER"]
#: Compose main's ``depends_on``: the runner waits for this file under /logs (the backend
#: writes it once the sidecars meet their conditions), for at most DEPENDS_ON_TIMEOUT_S.
READY_FILE = ".openforge-compose-ready"
DEPENDS_ON_TIMEOUT_S = 300.0


#: Where host binaries the harnesses need (node) are mounted; appended last to PATH so an
#: image's own copy wins.
RUNTIME_BIN = "/opt/openforge-runtime/bin"
RUNTIME_BINARIES = ("node",)


def runtime_binaries() -> dict[str, str]:
    """name -> host path of binaries mounted at RUNTIME_BIN (the npm harness CLIs need node)."""
    out: dict[str, str] = {}
    for name in RUNTIME_BINARIES:
        found = shutil.which(name)
        if found:
            out[name] = os.path.realpath(found)
    return out


class DockerBackend:
    """Sandboxes as Docker containers (see the module doc)."""

    name = "docker"

    def __init__(self, *, rollouts_dir: Path | None = None, max_threads: int = 96) -> None:
        reason = docker_unavailable_reason()
        if reason:
            raise SandboxError(reason)
        self.settings = get_orchestrator_settings()
        self.client = _client()
        self.rollouts_dir = rollouts_dir or get_settings().rollouts_dir
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="openforge-docker")
        self._build_locks: dict[str, asyncio.Lock] = {}
        self._images: dict[str, tuple[TaskImage, dict[str, str]]] = {}
        self._relays: HostRelays | None = None
        self._handles: dict[str, SandboxHandle] = {}
        self._started: set[str] = set()

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    @property
    def agent_uid(self) -> int:
        """Who the agent is in the container: our own uid when we are not root (bind mounts
        then just work), else ``OPENFORGE_SANDBOX_UID`` (0: root, no capabilities)."""
        return os.getuid() or self.settings.sandbox_uid

    async def _image(self, task_path: Path, build_timeout: float, docker_image: str | None = None,
                     workdir: str | None = None, ignore_dockerfile: bool = False,
                     own_workdir: bool = True) -> tuple[TaskImage, dict[str, str]]:
        """The task's image and its configured env; memoized per environment-dir content.
        ``docker_image``: an image-only task's ``[environment] docker_image`` (the image used
        as is, mapped through the alias table when it is not here)."""
        key = await asyncio.to_thread(environment_key, task_path) + f":{docker_image or ''}:{workdir or ''}:{own_workdir}"
        lock = self._build_locks.setdefault(str(task_path), asyncio.Lock())
        async with lock:
            if key not in self._images:
                image = await self._call(build_task_image, self.client, task_path, base=self.settings.base_image,
                                         aliases=self.settings.image_aliases, timeout=build_timeout,
                                         mounted=tuple(runtime_mounts()), agent_uid=self.agent_uid or None,
                                         docker_image=docker_image, workdir=workdir,
                                         ignore_dockerfile=ignore_dockerfile, own_workdir=own_workdir)
                env: dict[str, str] = {}
                img = await self._call(self.client.images.get, image.tag)
                for item in (img.attrs.get("Config") or {}).get("Env") or []:
                    k, _, v = item.partition("=")
                    env[k] = v
                self._images[key] = (image, env)
            return self._images[key]

    # -- start -----------------------------------------------------------------------
    async def start(self, spec: RolloutSpec) -> SandboxHandle:
        t0 = time.monotonic()
        self._started.add(spec.rollout_id)
        task, base, dirs = await asyncio.to_thread(load_and_lay_out, spec, self.rollouts_dir)
        handle = SandboxHandle(rollout_id=spec.rollout_id, backend=self.name, isolation="docker",
                               root=str(base), logs_dir=str(dirs.logs))
        handle.state.update(dirs=dirs, task_dir=task.path)
        self._handles[spec.rollout_id] = handle
        try:
            return await self._launch(spec, task, dirs, handle, t0)
        except BaseException:
            await outlast(self.cleanup(handle))
            raise

    async def _launch(self, spec, task, dirs: SandboxDirs, handle: SandboxHandle, t0: float) -> SandboxHandle:
        from docker.errors import APIError
        from docker.types import Mount

        check_supported(task, self.name)
        compose = None
        if task.compose_file is not None:
            try:
                compose = await asyncio.to_thread(read_compose, task.compose_file)
            except ComposeError as exc:
                raise SandboxError(str(exc), kind=ErrorKind.start_failed) from exc
            if compose.main.dockerfile and not task.dockerfile.is_file():
                raise SandboxError(f"{task.compose_file}: services.main.build: environment/Dockerfile missing",
                                   kind=ErrorKind.build_failed)
        docker_image = compose.main.image if compose is not None and compose.main.image else task.docker_image
        # Root in the container runs the runner, services and verifier; the harness runs as the
        # agent uid (agent jail ``uid``). As anyone but root on the host, everything runs as us.
        jail_uid = self.agent_uid if os.getuid() == 0 and self.agent_uid else None
        # task.toml [agent]/[verifier] user: the root runner switches to them (resolved in the
        # image); an agent user keeps the image's WORKDIR ownership, as in Harbor.
        agent_user, verifier_user, user_notes = task_users(task, jail_uid) if jail_uid else (None, None, [])
        handle.notes.extend(f"not honoured: {n}" for n in user_notes)
        try:
            image, image_env = await self._image(task.path, task.config.environment.build_timeout_sec,
                                                 docker_image, task.config.environment.workdir,
                                                 ignore_dockerfile=bool(compose and compose.main.image),
                                                 own_workdir=agent_user is None)
        except ImageBuildError as exc:
            raise SandboxError(str(exc), kind=ErrorKind.build_failed) from exc
        except APIError as exc:
            raise SandboxError(f"image lookup failed: {exc.explanation or exc}", kind=ErrorKind.build_failed) from exc
        t_built = time.monotonic()
        handle.timings["build"] = t_built - t0
        handle.state["image"] = image.tag
        if image.from_images:
            handle.notes += [(f"{a}: dropped ({b})" if a.startswith("COPY") else f"FROM {a} -> {b}")
                             for a, b in image.from_images.items() if a != b]
        oracle = spec.harness == "oracle"
        python = self.settings.sandbox_python or sys.executable
        # Harbor: [environment] workdir wins, then compose main's working_dir, then the image's.
        workdir = task.config.environment.workdir or (compose.main.working_dir if compose else None) or image.workdir
        cmd = runner_command(spec, python=python, task_dir="/task", workspace=workdir, logs_dir="/logs",
                             tests_dir="/tests", solution_dir="/solution" if oracle else None,
                             agent_timeout=None, verifier_timeout=None,
                             agent_jail="uid" if jail_uid else "none", agent_uid=jail_uid,
                             agent_user=agent_user, verifier_user=verifier_user,
                             wait_for=f"/logs/{READY_FILE}" if compose is not None and compose.main.depends_on else None)
        mounts = [
            Mount("/task", str(dirs.task), type="bind", read_only=True),
            Mount("/logs", str(dirs.logs), type="bind"),
            Mount("/tests", str(dirs.tests), type="bind"),
            Mount(workdir, None, type="volume"),
        ]
        if oracle:
            mounts.append(Mount("/solution", str(dirs.solution), type="bind", read_only=True))
        for path in runtime_mounts():
            mounts.append(Mount(path, path, type="bind", read_only=True))
        for name, host_path in runtime_binaries().items():
            mounts.append(Mount(f"{RUNTIME_BIN}/{name}", host_path, type="bind", read_only=True))
        network = "none"
        target = loopback_target(spec.base_url)
        if target is not None:
            if self._relays is None:
                self._relays = HostRelays()
            sock = await self._relays.ensure(*target)
            mounts.append(Mount(SANDBOX_RELAY_DIR, str(self._relays.dir), type="bind", read_only=True))
            cmd = with_relay(cmd, python=python, host=target[0], port=target[1],
                             unix_path=f"{SANDBOX_RELAY_DIR}/{sock.name}", init_path=str(SANDBOX_INIT))
        elif spec.base_url:
            network = "host"
            handle.isolation = "docker+host-net"
        env_cfg = dict(image_env)
        if compose is not None:
            env_cfg.update(compose.main.environment)
        if runtime_binaries():
            env_cfg["PATH"] = f"{env_cfg.get('PATH') or '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'}:{RUNTIME_BIN}"
        env = sandbox_env(spec, dockerfile_env=env_cfg, home=env_cfg.get("HOME", "/tmp"))
        env.update(task_env(task))
        handle.notes.extend(f"not honoured: {n}" for n in not_honoured(task, self.name, switches_users=bool(jail_uid)))
        for note in handle.notes:
            if note.startswith("not honoured: "):
                log.info("rollout %s: %s", spec.rollout_id, note)
        env_cfg_res = task.config.environment
        user, caps = None, []
        if jail_uid:
            user, caps = "0:0", RUNNER_CAPS
        elif self.agent_uid:
            user = f"{self.agent_uid}:{self.agent_uid}"
            handle.notes.append("agent jail: none (not root on the host: runner and agent share one uid)")
        tmpfs = {"/tmp": "rw,exec,size=1g", "/run": "rw,size=64m", "/var/tmp": "rw,size=256m"}
        for hidden in runtime_view().hidden:
            tmpfs[hidden] = "ro,size=4k"
        kwargs: dict[str, Any] = dict(  # noqa: C408 - reads as the docker run flags
            image=image.tag, command=cmd, name=f"openforge-{spec.rollout_id}", detach=True,
            environment=env, working_dir=workdir, mounts=mounts, network_mode=network,
            read_only=True, tmpfs=tmpfs, cap_drop=["ALL"], cap_add=caps, security_opt=["no-new-privileges"], init=True, user=user, hostname=SANDBOX_HOSTNAME,
            mem_limit=f"{int(env_cfg_res.memory_mb)}m", memswap_limit=f"{int(env_cfg_res.memory_mb)}m",
            nano_cpus=int(env_cfg_res.cpus * 1e9), pids_limit=DEFAULT_PIDS,
            labels={LABEL: "1", "openforge.rollout": spec.rollout_id},
        )
        if compose is not None and compose.sidecars:  # their names resolve to main's loopback
            kwargs["extra_hosts"] = {svc.name: "127.0.0.1" for svc in compose.sidecars}
        try:
            container = await self._call(self.client.containers.create, **kwargs)
            handle.state["container"] = container
            await self._call(container.start)
        except APIError as exc:
            raise SandboxError(f"container start failed: {exc.explanation or exc}", kind=ErrorKind.start_failed) from exc
        if compose is not None and compose.sidecars:
            await self._start_sidecars(spec, handle, container, compose)
        if compose is not None and compose.main.depends_on:  # the runner waits for this
            (dirs.logs / READY_FILE).write_text("ready\n", encoding="utf-8")
        handle.timings["start"] = time.monotonic() - t_built
        await self._watch_storage(handle, container, dirs, int(env_cfg_res.storage_mb))
        handle.timings["start_latency"] = time.monotonic() - t0
        return handle

    async def _start_sidecars(self, spec: RolloutSpec, handle: SandboxHandle, main: Any, compose: ComposePlan) -> None:
        """Compose sidecars in main's network namespace (compose.py), in ``depends_on`` order,
        each once what it depends on meets its condition (then main's own ``depends_on``);
        one line on failure."""
        from docker.errors import APIError, ImageNotFound

        def exists(ref: str) -> bool:
            try:
                self.client.images.get(ref)
                return True
            except (ImageNotFound, APIError):
                return False

        sidecars: list[Any] = handle.state.setdefault("sidecars", [])
        started: dict[str, Any] = {}
        for svc in start_order(compose):
            ref = await self._sidecar_image(svc, handle, exists)
            for dep, condition in svc.depends_on.items():
                if dep in started:
                    await self._wait_condition(started[dep], dep, condition)
            try:
                side = await self._call(
                    self.client.containers.create, image=ref, command=svc.command, environment=svc.environment,
                    working_dir=svc.working_dir, detach=True, network_mode=f"container:{main.id}",
                    name=f"openforge-{spec.rollout_id}-{svc.name}", security_opt=["no-new-privileges"],
                    healthcheck=svc.healthcheck,
                    labels={LABEL: "1", "openforge.rollout": spec.rollout_id, "openforge.compose-service": svc.name})
                sidecars.append(side)
                await self._call(side.start)
            except APIError as exc:
                raise SandboxError(f"compose service {svc.name} ({ref}): {str(exc.explanation or exc).splitlines()[0]}",
                                   kind=ErrorKind.start_failed) from exc
            started[svc.name] = side
        for dep, condition in compose.main.depends_on.items():
            if dep in started:
                await self._wait_condition(started[dep], dep, condition)

    async def _sidecar_image(self, svc: Service, handle: SandboxHandle, exists: Any) -> str:
        """A sidecar's image: built from its ``build`` (aliased FROMs), else its ``image`` aliased."""
        if svc.build is not None:
            try:
                tag, mapping = await self._call(build_sidecar_image, self.client, svc.build.context, svc.build.dockerfile,
                                                base=self.settings.base_image, aliases=self.settings.image_aliases,
                                                buildargs=svc.build.args)
            except ImageBuildError as exc:
                raise SandboxError(f"compose service {svc.name}: {exc}", kind=ErrorKind.build_failed) from exc
            handle.notes += [f"compose service {svc.name}: FROM {a} -> {b}" for a, b in mapping.items() if a != b]
            return tag
        assert svc.image is not None
        ref = await self._call(resolve_from, svc.image, exists=exists, aliases=self.settings.image_aliases,
                               base=self.settings.base_image)
        if ref != svc.image:
            handle.notes.append(f"compose service {svc.name}: image {svc.image} -> {ref}")
        return ref

    async def _wait_condition(self, container: Any, name: str, condition: str,
                              timeout: float = DEPENDS_ON_TIMEOUT_S) -> None:
        """Compose's ``depends_on`` condition on a started sidecar; one line when it fails."""
        deadline = time.monotonic() + timeout
        while True:
            if condition == "service_started":
                return
            await self._call(container.reload)
            state = container.attrs.get("State") or {}
            if condition == "service_healthy":
                health = (state.get("Health") or {}).get("Status")
                if health is None:
                    raise SandboxError(f"compose service {name}: depends_on condition service_healthy, but it has no "
                                       "healthcheck", kind=ErrorKind.start_failed)
                if health == "healthy":
                    return
                if health == "unhealthy" or state.get("Status") in ("exited", "dead"):
                    raise SandboxError(f"compose service {name}: unhealthy (depends_on condition service_healthy)",
                                       kind=ErrorKind.start_failed)
            elif state.get("Status") in ("exited", "dead"):  # service_completed_successfully
                if state.get("ExitCode") == 0:
                    return
                raise SandboxError(f"compose service {name}: exited {state.get('ExitCode')} (depends_on condition "
                                   "service_completed_successfully)", kind=ErrorKind.start_failed)
            if time.monotonic() > deadline:
                raise SandboxError(f"compose service {name}: not {condition.removeprefix('service_')} within "
                                   f"{timeout:.0f}s (depends_on)", kind=ErrorKind.start_failed)
            await asyncio.sleep(0.2)

    async def _watch_storage(self, handle: SandboxHandle, container: Any, dirs: SandboxDirs, storage_mb: int) -> None:
        """storage_mb: docker cannot cap a volume or a bind, so a watchdog polls the WORKDIR
        volume's host dir and the logs, and kills the container past the limit."""
        try:
            info = await self._call(self.client.api.inspect_container, container.id)
        except Exception as exc:  # noqa: BLE001 - the container went away already
            log.debug("inspect %s: %s", handle.rollout_id, exc)
            return
        disk = [Path(m["Source"]) for m in info.get("Mounts") or [] if m.get("Type") == "volume" and m.get("Source")]

        def exceeded(kind: str, detail: str) -> None:
            handle.state["limit"] = (kind, detail)
            asyncio.get_running_loop().create_task(self.cancel(handle, limit=True))

        watchdog = Watchdog(storage_mb=storage_mb, disk=[*disk, dirs.logs], limits=None, pids_fn=None,
                            on_exceeded=exceeded)
        watchdog.start()
        handle.state["watchdog"] = watchdog

    # -- follow ----------------------------------------------------------------------
    async def wait(self, handle: SandboxHandle) -> SandboxExit:
        container = handle.state["container"]
        dirs: SandboxDirs = handle.state["dirs"]
        task_dir: Path = handle.state["task_dir"]
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        t0 = time.monotonic()

        def pump() -> None:
            buf = b""
            try:
                for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=False):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        loop.call_soon_threadsafe(queue.put_nowait, line.decode("utf-8", errors="replace"))
            except Exception as exc:  # noqa: BLE001 - the container went away
                log.debug("logs stream of %s ended: %s", handle.rollout_id, exc)
            finally:
                if buf:
                    loop.call_soon_threadsafe(queue.put_nowait, buf.decode("utf-8", errors="replace"))
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        async def agent_done(step: str | None = None) -> None:
            # Tests stay ours (root's): the agent uid cannot write them (its processes are gone
            # by now anyway: the runner emptied the jail before saying agent_done).
            await asyncio.to_thread(copy_tests, task_dir, dirs.tests, step=step)

        follower = RunnerFollower(dirs.runner_log, agent_done)
        pump_future = loop.run_in_executor(self._pool, pump)
        try:
            while (line := await queue.get()) is not _END:
                await follower.feed(line)
            await pump_future
            status = await self._call(container.wait)
            await self._call(container.reload)
        finally:
            follower.close()
        code = status.get("StatusCode")
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        try:
            err = await self._call(container.logs, stdout=False, stderr=True)
            with dirs.runner_log.open("ab") as f:
                f.write(err)
        except Exception as exc:  # noqa: BLE001 - the container is gone: stdout was kept
            log.debug("stderr of %s: %s", handle.rollout_id, exc)
        timings = {"run": time.monotonic() - t0}
        if follower.agent_done_at is not None:
            timings["agent"] = follower.agent_done_at - t0
        watchdog: Watchdog | None = handle.state.pop("watchdog", None)
        if watchdog is not None:
            await watchdog.stop()
        limit, detail = handle.state.get("limit") or (None, None)
        if limit is None and oom:
            limit, detail = ErrorKind.oom.value, "container OOMKilled (memory_mb)"
        return SandboxExit(exit_code=code, report=follower.report, oom=oom, limit=limit,
                           cancelled=handle.state.get("cancelled", False), error=detail or follower.report_error,
                           timings=timings)

    async def cancel(self, handle: SandboxHandle, *, limit: bool = False) -> None:
        handle.state["cancelled"] = not limit
        for side in handle.state.get("sidecars", []):
            try:
                await self._call(side.kill)
            except Exception as exc:  # noqa: BLE001 - already gone
                log.debug("kill sidecar of %s: %s", handle.rollout_id, exc)
        container = handle.state.get("container")
        if container is not None:
            try:
                await self._call(container.kill)
            except Exception as exc:  # noqa: BLE001 - already gone
                log.debug("kill %s: %s", handle.rollout_id, exc)

    async def logs(self, handle: SandboxHandle) -> str:
        path = Path(handle.root) / "runner.log"
        return await asyncio.to_thread(lambda: path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")

    async def cleanup(self, handle: SandboxHandle) -> None:
        watchdog: Watchdog | None = handle.state.pop("watchdog", None)
        if watchdog is not None:
            await watchdog.stop()
        for side in handle.state.pop("sidecars", []):
            try:
                await self._call(side.remove, force=True, v=True)
            except Exception as exc:  # noqa: BLE001 - removed already
                log.debug("remove sidecar of %s: %s", handle.rollout_id, exc)
        container = handle.state.pop("container", None)
        if container is not None:
            try:
                await self._call(container.remove, force=True, v=True)
            except Exception as exc:  # noqa: BLE001 - removed already
                log.debug("remove %s: %s", handle.rollout_id, exc)
        dirs = handle.state.get("dirs") or SandboxDirs(Path(handle.root))
        await asyncio.to_thread(remove_sandbox, dirs)
        self._handles.pop(handle.rollout_id, None)

    async def live_sandboxes(self) -> list[str]:
        """Sandbox dirs under rollouts_dir, and containers of sandboxes this backend started."""
        # Low-level list: no per-container inspect that races with removals elsewhere.
        containers = await self._call(self.client.api.containers, all=True, filters={"label": LABEL})
        live = {(c.get("Labels") or {}).get("openforge.rollout", "") for c in containers} & self._started
        if self.rollouts_dir.exists():
            live |= {p.parent.name for p in self.rollouts_dir.glob("*/sandbox")}
        return sorted(live)

    async def aclose(self) -> None:
        for handle in list(self._handles.values()):
            await self.cleanup(handle)
        if self._relays is not None:
            await self._relays.aclose()
            self._relays = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
