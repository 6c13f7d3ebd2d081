"""The claw domain's declaration for the domain registry: its mock services, their launcher
(``environments.claw.serve``) and their SKILL.md files (``environments.claw.skills``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from environments.claw.names import SERVICE_NAMES
from environments.domain import Domain


def _skill_md(service: str) -> str:
    from environments.claw.skills import skill_md  # tool schemas load only when asked

    return skill_md(service)


def _app(services: list[str], fixtures: Path | None) -> Any:
    from environments.claw.app import create_app  # the ASGI stack loads only when served

    return create_app(services, str(fixtures) if fixtures is not None else None)


DOMAIN = Domain(name="claw", service_names=SERVICE_NAMES, serve_module="environments.claw.serve", skill_md=_skill_md,
                app_factory=_app)
