"""The domain registry: the domains whose mock services a task may name, and what the runner
asks of them — :func:`domain_for` (who hosts a task's services, and with which launcher)
and :func:`skill_files` (the SKILL.md files of those services). The runner and
``python -m environments.serve`` ask here instead of importing a domain; a new domain adds
its ``domain.py`` declaration to :data:`DOMAINS`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from environments.browser.domain import DOMAIN as BROWSER
from environments.claw.domain import DOMAIN as CLAW
from environments.domain import Domain

#: Every domain with services, in the order :func:`domain_for` asks them.
DOMAINS: tuple[Domain, ...] = (BROWSER, CLAW)

log = logging.getLogger(__name__)


class UnknownServices(ValueError):
    """No one domain hosts every service of the group."""


def domain_for(services: Sequence[str]) -> Domain:
    """The domain hosting every one of ``services``; :class:`UnknownServices` when none does."""
    for domain in DOMAINS:
        if domain.hosts(services):
            return domain
    known = "; ".join(f"{d.name}: {', '.join(d.service_names)}" for d in DOMAINS)
    raise UnknownServices(f"no domain hosts all of the services {', '.join(services) or '(none)'} (known: {known})")


def skill_files(services: Sequence[str]) -> dict[str, str]:
    """``{"<domain>-<service>": SKILL.md text}`` for each service whose domain ships one (a
    SKILL.md that cannot be rendered is left out and logged: it must not sink a rollout)."""
    out: dict[str, str] = {}
    for service in services:
        domain = next((d for d in DOMAINS if service in d.service_names), None)
        if domain is None or domain.skill_md is None:
            continue
        try:
            out[f"{domain.name}-{service}"] = domain.skill_md(service)
        except Exception as exc:  # noqa: BLE001 - a missing skill must not sink the rollout
            log.warning("no SKILL.md for service %s: %s", service, exc)
    return out
