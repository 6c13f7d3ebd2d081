"""What a domain declares so that the runner can serve its tasks without importing it.

A domain with mock services (``claw``, ``browser``) declares one :class:`Domain` in its own
``domain.py``; ``environments.domain_registry`` lists those declarations and is what the
runner (and ``python -m environments.serve``) asks: which domain hosts a task's
``metadata.openforge.services``, which launcher starts them, which SKILL.md files a harness
gets for them. A domain never imports the runner or the registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The one launcher of any domain's services (``python -m environments.serve --services ...``):
#: it asks the registry which domain hosts them and runs that domain's ``serve_module``.
SERVE_MODULE = "environments.serve"

#: Where a domain keeps the commands its SKILL.md files tell a model to run (claw: ``claw-call``):
#: ``environments/<domain>/bin/``. Every harness gets the folders of its skills' domains first
#: on PATH (``Harness.plan``), so a skill's command needs nothing else from the environment
#: (a harness's shell tool may strip ``PYTHONPATH``, as OpenClaw's ``exec`` does).
BIN_DIR = "bin"
_ENVIRONMENTS = Path(__file__).resolve().parent


def skill_bin_dirs(skill_names: Iterable[str]) -> list[Path]:
    """The existing ``environments/<domain>/bin`` folders of skills named ``<domain>-<service>``
    (:func:`environments.domain_registry.skill_files`' keys), each once, in order."""
    out: list[Path] = []
    for name in skill_names:
        domain = name.partition("-")[0]
        path = _ENVIRONMENTS / domain / BIN_DIR
        if domain.isidentifier() and path not in out and path.is_dir():
            out.append(path)
    return out


def prepend_path(dirs: Sequence[Path | str], path: str | None) -> str:
    """``path`` (a PATH value; None/empty: ``os.defpath``) with ``dirs`` first, each once."""
    first = [str(d) for d in dirs]
    rest = [p for p in (path or os.defpath).split(os.pathsep) if p and p not in first]
    return os.pathsep.join([*first, *rest])


@dataclass(frozen=True)
class Domain:
    """One domain's services: their names, their launcher, their SKILL.md files."""

    #: The domain's name (SKILL.md folders are ``<name>-<service>``).
    name: str
    #: Every service the domain hosts.
    service_names: tuple[str, ...]
    #: ``python -m <serve_module> --services a,b --host H --port P --ready-file F [--fixtures DIR]``
    #: serves them: ``{"url", "port", "pid"}`` in the ready file once listening, ``GET /healthz``.
    serve_module: str
    #: The SKILL.md text of one service, for harnesses that cannot register custom tools.
    skill_md: Callable[[str], str] | None = None
    #: ``app_factory(services, fixtures_dir | None)`` → the ASGI app ``serve_module`` would serve
    #: (raising on unknown services or bad fixtures): the runner then serves it on a thread of
    #: its own (environments/service_host.py) instead of starting a second interpreter.
    app_factory: Callable[[list[str], Path | None], Any] | None = None

    def hosts(self, services: Sequence[str]) -> bool:
        """True when ``services`` is not empty and every one of them is this domain's."""
        return bool(services) and all(s in self.service_names for s in services)
