"""Harbor compose tasks (``environment/docker-compose.yaml``) on the docker backend.

What is run: the ``main`` service is the sandbox (its image from ``build`` — context ``.``,
i.e. ``environment/``, with its Dockerfile — or from ``image``, mapped through the alias
table like any FROM); ``environment`` and ``working_dir`` of main are honoured, its
``command`` is replaced by the runner. Every other service is a sidecar container started
from its ``image`` (aliased) with its ``command`` / ``environment``, inside main's network
namespace (``network_mode: container:<main>``), so main keeps ``network_mode none`` and
reaches the sidecars on loopback; their service names resolve to 127.0.0.1 in main.

A sidecar's ``build`` (a context dir inside ``environment/``, its ``dockerfile`` and ``args``)
is built like the task image (FROM lines aliased). ``depends_on`` (a list, or a mapping with
``condition``: ``service_started`` | ``service_healthy`` | ``service_completed_successfully``)
orders the sidecars and gates them; ``healthcheck`` (``test``, ``interval``, ``timeout``,
``retries``, ``start_period``, ``disable``) is the sidecar's Docker healthcheck. Main is started
first (the sidecars join its network namespace), so main's own ``depends_on`` holds the
runner back until those conditions hold. What is not supported is refused in one line naming
the key (a main build context other than ``.``, an unknown ``depends_on`` service or
condition, a cycle); ``network_mode``/``ports`` tricks are ignored — nothing leaves the sandbox
anyway. ``[environment.healthcheck]`` still runs in main before the agent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MAIN = "main"
CONDITIONS = ("service_started", "service_healthy", "service_completed_successfully")


class ComposeError(ValueError):
    """The compose file cannot be run here (one line naming the file and key)."""


@dataclass(frozen=True)
class Build:
    """A sidecar's ``build``: ``context`` (a dir inside environment/), its Dockerfile, args."""

    context: Path
    dockerfile: str = "Dockerfile"
    args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Service:
    name: str
    image: str | None = None
    dockerfile: str | None = None  # main only: a Dockerfile in environment/
    command: list[str] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    build: Build | None = None  # sidecars only
    #: ``depends_on``: service name -> condition (one of :data:`CONDITIONS`).
    depends_on: dict[str, str] = field(default_factory=dict)
    #: Docker SDK healthcheck (``test`` list, durations in ns), None: the image's own.
    healthcheck: dict[str, Any] | None = None


@dataclass(frozen=True)
class ComposePlan:
    main: Service
    sidecars: list[Service]


def _env(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        out: dict[str, str] = {}
        for item in value:
            key, _, val = str(item).partition("=")
            out[key] = val
        return out
    raise ComposeError(f"{where}.environment: expected a mapping or a list of KEY=VALUE")


def _command(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list):
        return [str(v) for v in value]
    raise ComposeError(f"{where}.command: expected a string or a list")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_UNIT_NS = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


def _duration_ns(value: Any, where: str) -> int:
    """Compose's duration (``1m30s``, ``500ms``, a number of seconds) in nanoseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * 1_000_000_000)
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ComposeError(f"{where}: {value!r} is not a duration (e.g. 5s, 1m30s, 500ms)")
    return int(sum(float(n) * _UNIT_NS[u] for n, u in parts))


def _healthcheck(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ComposeError(f"{where}.healthcheck: expected a mapping")
    if value.get("disable"):
        return {"test": ["NONE"]}
    test = value.get("test")
    if isinstance(test, str):
        test = ["CMD-SHELL", test]
    if not isinstance(test, list) or not test:
        raise ComposeError(f"{where}.healthcheck.test: expected a string or a list")
    out: dict[str, Any] = {"test": [str(t) for t in test]}
    for key in ("interval", "timeout", "start_period"):
        if value.get(key) is not None:
            out[key] = _duration_ns(value[key], f"{where}.healthcheck.{key}")
    if value.get("retries") is not None:
        out["retries"] = int(value["retries"])
    return out


def _depends_on(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, list):
        return {str(name): "service_started" for name in value}
    if not isinstance(value, dict):
        raise ComposeError(f"{where}.depends_on: expected a list or a mapping")
    out: dict[str, str] = {}
    for name, spec in value.items():
        condition = (spec or {}).get("condition", "service_started") if isinstance(spec, dict) else "service_started"
        if condition not in CONDITIONS:
            raise ComposeError(f"{where}.depends_on.{name}.condition: {condition!r} is not one of {', '.join(CONDITIONS)}")
        out[str(name)] = str(condition)
    return out


def _build(value: Any, env_dir: Path, where: str) -> Build:
    spec = {"context": value} if isinstance(value, str) else value
    if not isinstance(spec, dict):
        raise ComposeError(f"{where}.build: expected a path or a mapping")
    context = str(spec.get("context") or ".")
    root = env_dir.resolve()
    resolved = (env_dir / context).resolve()
    if resolved != root and root not in resolved.parents:
        raise ComposeError(f"{where}.build.context: {context!r} leaves environment/")
    if not resolved.is_dir():
        raise ComposeError(f"{where}.build.context: {context!r}: no such directory in environment/")
    dockerfile = str(spec.get("dockerfile") or "Dockerfile")
    target = (resolved / dockerfile).resolve()
    if resolved not in target.parents or not target.is_file():
        raise ComposeError(f"{where}.build.dockerfile: {dockerfile!r}: no such file in {context!r}")
    return Build(context=resolved, dockerfile=dockerfile, args=_env(spec.get("args"), f"{where}.build"))


def start_order(plan: ComposePlan, where: str = "services") -> list[Service]:
    """The sidecars in ``depends_on`` order (each after what it depends on); a cycle or an
    unknown service is a :class:`ComposeError`. ``main`` is always up first."""
    by_name = {svc.name: svc for svc in plan.sidecars}
    for svc in [plan.main, *plan.sidecars]:
        for dep, condition in svc.depends_on.items():
            if dep != MAIN and dep not in by_name:
                raise ComposeError(f"{where}.{svc.name}.depends_on: unknown service {dep!r}")
            if dep == MAIN and condition != "service_started":
                raise ComposeError(f"{where}.{svc.name}.depends_on.{MAIN}: only service_started (main starts first)")
    order: list[Service] = []
    state: dict[str, str] = {}

    def visit(svc: Service, chain: list[str]) -> None:
        if state.get(svc.name) == "done":
            return
        if state.get(svc.name) == "visiting":
            raise ComposeError(f"{where}: depends_on cycle {' -> '.join([*chain, svc.name])}")
        state[svc.name] = "visiting"
        for dep in svc.depends_on:
            if dep != MAIN:
                visit(by_name[dep], [*chain, svc.name])
        state[svc.name] = "done"
        order.append(svc)

    for svc in plan.sidecars:
        visit(svc, [])
    return order


def read_compose(path: Path) -> ComposePlan:
    """The plan of ``environment/docker-compose.yaml``; raises :class:`ComposeError`."""
    where = f"{path}: services"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ComposeError(f"{path}: unreadable compose file: {str(exc).splitlines()[0]}") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or MAIN not in services:
        raise ComposeError(f"{where}.{MAIN}: missing (Harbor's agent container is the 'main' service)")
    main_doc = services[MAIN] or {}
    build = main_doc.get("build")
    dockerfile = None
    if build is not None:
        context = build if isinstance(build, str) else (build.get("context") or ".")
        if str(context).rstrip("/") not in (".", ""):
            raise ComposeError(f"{where}.{MAIN}.build.context: {context!r}: only '.' (environment/) is supported")
        dockerfile = "Dockerfile" if isinstance(build, str) else str(build.get("dockerfile") or "Dockerfile")
        if dockerfile != "Dockerfile":
            raise ComposeError(f"{where}.{MAIN}.build.dockerfile: {dockerfile!r}: only environment/Dockerfile is supported")
    elif not main_doc.get("image"):
        raise ComposeError(f"{where}.{MAIN}: needs 'build' or 'image'")
    main = Service(MAIN, image=None if build is not None else str(main_doc["image"]), dockerfile=dockerfile,
                   environment=_env(main_doc.get("environment"), f"{where}.{MAIN}"),
                   working_dir=main_doc.get("working_dir"),
                   depends_on=_depends_on(main_doc.get("depends_on"), f"{where}.{MAIN}"))
    sidecars: list[Service] = []
    for name, svc in services.items():
        if name == MAIN:
            continue
        svc = svc or {}
        at = f"{where}.{name}"
        built = _build(svc["build"], path.parent, at) if svc.get("build") is not None else None
        if built is None and not svc.get("image"):
            raise ComposeError(f"{at}: needs 'build' or 'image'")
        sidecars.append(Service(str(name), image=None if built is not None else str(svc["image"]), build=built,
                                command=_command(svc.get("command"), at), environment=_env(svc.get("environment"), at),
                                working_dir=svc.get("working_dir"), depends_on=_depends_on(svc.get("depends_on"), at),
                                healthcheck=_healthcheck(svc.get("healthcheck"), at)))
    plan = ComposePlan(main=main, sidecars=sidecars)
    start_order(plan, where)  # unknown services and cycles are refused at read time
    return plan
