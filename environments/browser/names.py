"""Names of the mock websites (no imports: the in-sandbox runner reads this to pick the
service launcher). A site ``<name>`` is browsed at ``http://<name>.test/``."""

from __future__ import annotations

#: The mock websites of the browser-use environment.
SITE_NAMES: tuple[str, ...] = ("shop", "travel", "forum", "docs")
#: Top-level domain of the mock sites; the browser maps ``*.test`` to the local server.
SITE_TLD = "test"
#: Header the verifier sends to read or reset a site's state (a browser cannot send it).
CONTROL_HEADER = "X-OpenForge-Control"


def is_site_group(services: list[str]) -> bool:
    """True when every service of a task is a mock website (browser-use task)."""
    return bool(services) and all(s in SITE_NAMES for s in services)


def site_host(name: str) -> str:
    return f"{name}.{SITE_TLD}"
