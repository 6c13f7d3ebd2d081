"""The browser-use domain's declaration for the domain registry: its mock websites and their
launcher (``environments.browser.serve``); sites come with no SKILL.md (a browser drives them)."""

from __future__ import annotations

from environments.browser.names import SITE_NAMES
from environments.domain import Domain

DOMAIN = Domain(name="browser", service_names=SITE_NAMES, serve_module="environments.browser.serve")
