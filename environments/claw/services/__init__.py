"""Registry of the claw mock services: ``SERVICE_NAMES`` and ``get_spec(name)``.

Service modules are imported lazily so a process pays only for the services it hosts.
"""

from __future__ import annotations

import importlib

from environments.claw.core import ServiceSpec
from environments.claw.names import SERVICE_NAMES

__all__ = ["SERVICE_NAMES", "UnknownServiceError", "get_spec", "parse_services"]


class UnknownServiceError(ValueError):
    """A service name that is not one of ``SERVICE_NAMES``."""


def get_spec(name: str) -> ServiceSpec:
    """The :class:`ServiceSpec` of service ``name``."""
    if name not in SERVICE_NAMES:
        raise UnknownServiceError(f"unknown claw service {name!r} (known: {', '.join(SERVICE_NAMES)})")
    return importlib.import_module(f"environments.claw.services.{name}").SPEC


def parse_services(value: str | list[str] | tuple[str, ...]) -> list[str]:
    """``"gmail,kb"`` / ``["gmail", "kb"]`` / ``"all"`` → validated, de-duplicated names."""
    items = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for raw in items:
        name = raw.strip().lower()
        if not name:
            continue
        if name == "all":
            names.extend(n for n in SERVICE_NAMES if n not in names)
            continue
        if name not in SERVICE_NAMES:
            raise UnknownServiceError(f"unknown claw service {name!r} (known: {', '.join(SERVICE_NAMES)})")
        if name not in names:
            names.append(name)
    if not names:
        raise UnknownServiceError("no claw services given")
    return names
