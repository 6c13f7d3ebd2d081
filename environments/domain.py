"""What a domain declares so that the runner can serve its tasks without importing it.

A domain with mock services (``claw``, ``browser``) declares one :class:`Domain` in its own
``domain.py``; ``environments.domain_registry`` lists those declarations and is what the
runner (and ``python -m environments.serve``) asks: which domain hosts a task's
``metadata.openforge.services``, which launcher starts them, which SKILL.md files a harness
gets for them. A domain never imports the runner or the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: The one launcher of any domain's services (``python -m environments.serve --services ...``):
#: it asks the registry which domain hosts them and runs that domain's ``serve_module``.
SERVE_MODULE = "environments.serve"


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

    def hosts(self, services: Sequence[str]) -> bool:
        """True when ``services`` is not empty and every one of them is this domain's."""
        return bool(services) and all(s in self.service_names for s in services)
