"""Harbor compose tasks (``environment/docker-compose.yaml``) on the docker backend.

What is run: the ``main`` service is the sandbox (its image from ``build`` — context ``.``,
i.e. ``environment/``, with its Dockerfile — or from ``image``, mapped through the alias
table like any FROM); ``environment`` and ``working_dir`` of main are honoured, its
``command`` is replaced by the runner. Every other service is a sidecar container started
from its ``image`` (aliased) with its ``command`` / ``environment``, inside main's network
namespace (``network_mode: container:<main>``), so main keeps ``network_mode none`` and
reaches the sidecars on loopback; their service names resolve to 127.0.0.1 in main. What is
not supported is refused in one line naming the key (sidecars with ``build``, a main build
context other than ``.``, ``network_mode``/``ports`` tricks are ignored — nothing leaves the
sandbox anyway). Use ``[environment.healthcheck]`` to wait for sidecars before the agent.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MAIN = "main"


class ComposeError(ValueError):
    """The compose file cannot be run here (one line naming the file and key)."""


@dataclass(frozen=True)
class Service:
    name: str
    image: str | None = None
    dockerfile: str | None = None  # main only: a Dockerfile in environment/
    command: list[str] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None


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
                   working_dir=main_doc.get("working_dir"))
    sidecars: list[Service] = []
    for name, svc in services.items():
        if name == MAIN:
            continue
        svc = svc or {}
        if svc.get("build") is not None:
            raise ComposeError(f"{where}.{name}.build: sidecars built from source are not supported (use 'image')")
        if not svc.get("image"):
            raise ComposeError(f"{where}.{name}.image: missing")
        sidecars.append(Service(str(name), image=str(svc["image"]), command=_command(svc.get("command"), f"{where}.{name}"),
                                environment=_env(svc.get("environment"), f"{where}.{name}"),
                                working_dir=svc.get("working_dir")))
    return ComposePlan(main=main, sidecars=sidecars)
