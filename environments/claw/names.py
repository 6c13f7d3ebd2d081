"""Names of the claw mock services (no imports: the domain declaration reads them)."""

from __future__ import annotations

#: Every claw service, in documentation order.
SERVICE_NAMES: tuple[str, ...] = ("gmail", "calendar", "contacts", "helpdesk", "crm", "kb", "web", "files", "notes")
