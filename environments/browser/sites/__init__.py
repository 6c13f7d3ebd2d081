"""The mock websites: one module per site (``TITLE``, ``default_fixture()``, ``routes(store)``)."""

from __future__ import annotations

from types import ModuleType

from environments.browser.names import SITE_NAMES
from environments.browser.sites import docs, forum, shop, travel

SITES: dict[str, ModuleType] = {"shop": shop, "travel": travel, "forum": forum, "docs": docs}
assert tuple(SITES) == SITE_NAMES


class UnknownSiteError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_site(name: str) -> ModuleType:
    try:
        return SITES[name]
    except KeyError:
        raise UnknownSiteError(f"unknown site {name!r} (known: {', '.join(SITES)})") from None
