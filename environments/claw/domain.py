"""The claw domain's declaration for the domain registry: its mock services, their launcher
(``environments.claw.serve``) and their SKILL.md files (``environments.claw.skills``)."""

from __future__ import annotations

from environments.claw.names import SERVICE_NAMES
from environments.domain import Domain


def _skill_md(service: str) -> str:
    from environments.claw.skills import skill_md  # tool schemas load only when asked

    return skill_md(service)


DOMAIN = Domain(name="claw", service_names=SERVICE_NAMES, serve_module="environments.claw.serve", skill_md=_skill_md)
