"""Names of the mock websites (no imports: the domain declaration, ``domain.py``, reads
them). A site ``<name>`` is browsed at ``http://<name>.test/``."""

from __future__ import annotations

#: The mock websites of the browser-use environment.
SITE_NAMES: tuple[str, ...] = ("shop", "travel", "forum", "docs")
#: Top-level domain of the mock sites; the browser maps ``*.test`` to the local server.
SITE_TLD = "test"
#: Header the verifier sends to read or reset a site's state (a browser cannot send it).
CONTROL_HEADER = "X-OpenForge-Control"


def site_host(name: str) -> str:
    return f"{name}.{SITE_TLD}"
