"""A Chromium browser for one rollout, driven over CDP by Playwright.

Local (default): the system Chromium (``/usr/bin/chromium``, no browser download), headless,
``--no-sandbox`` (the rollout sandbox is the isolation), background networking off, a
1280×720 viewport, and ``*.test`` mapped onto the mock websites' server so the agent
browses ``http://shop.test/``. Remote: ``cdp_url`` attaches to a running browser with
``connect_over_cdp`` (real-web training at scale; the mock-site mapping does not apply).

:class:`BrowserSession` tracks the open tabs (new windows/popups become tabs) and which one
is active; everything is async and nothing blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

DEFAULT_CHROMIUM = "/usr/bin/chromium"
VIEWPORT = (1280, 720)
#: Flags of a quiet, deterministic headless Chromium inside a rollout sandbox.
CHROMIUM_FLAGS = (
    "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-default-apps", "--disable-sync", "--no-first-run",
    "--no-default-browser-check", "--metrics-recording-only", "--disable-breakpad",
    "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions",
    "--password-store=basic", "--use-mock-keychain", "--mute-audio", "--font-render-hinting=none",
)


class BrowserStartError(RuntimeError):
    """Chromium (or the remote browser) could not be started/attached: an infra error."""


@dataclass
class BrowserConfig:
    executable: str = DEFAULT_CHROMIUM
    headless: bool = True
    viewport: tuple[int, int] = VIEWPORT
    sites_url: str | None = None  # http://127.0.0.1:PORT of the mock websites (maps *.test there)
    cdp_url: str | None = None  # attach to this browser instead of launching one
    extra_args: list[str] = field(default_factory=list)
    launch_timeout: float = 60.0
    navigation_timeout: float = 15.0

    @classmethod
    def from_env(cls, **overrides: Any) -> BrowserConfig:
        """Defaults from ``OPENFORGE_CHROMIUM`` and ``OPENFORGE_BROWSER_CDP_URL``."""
        cfg = cls(executable=os.environ.get("OPENFORGE_CHROMIUM", DEFAULT_CHROMIUM),
                  cdp_url=os.environ.get("OPENFORGE_BROWSER_CDP_URL") or None)
        for k, v in overrides.items():
            if v is not None:
                setattr(cfg, k, v)
        return cfg

    def launch_args(self) -> list[str]:
        args = list(CHROMIUM_FLAGS)
        if self.sites_url:
            parts = urlsplit(self.sites_url)
            args.append(f"--host-resolver-rules=MAP *.test {parts.hostname}:{parts.port or 80}")
        return args + list(self.extra_args)


class BrowserSession:
    """``async with BrowserSession(cfg) as b: await b.page.goto(...)``; tabs in ``b.pages``."""

    def __init__(self, config: BrowserConfig | None = None) -> None:
        self.config = config or BrowserConfig()
        self.pages: list[Any] = []
        self.active = 0
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._owns_context = True
        self._navigating: set[Any] = set()  # navigation requests in flight (any tab)

    @property
    def page(self) -> Any:
        """The active tab (Playwright ``Page``)."""
        return self.pages[self.active]

    async def start(self) -> BrowserSession:
        try:
            from playwright.async_api import async_playwright
        except ImportError as exc:
            raise BrowserStartError("playwright is not installed (pip install 'openforge[gui]')") from exc
        cfg = self.config
        width, height = cfg.viewport
        self._pw = await async_playwright().start()
        try:
            if cfg.cdp_url:
                self._browser = await self._pw.chromium.connect_over_cdp(cfg.cdp_url, timeout=cfg.launch_timeout * 1000)
                self._context = await self._browser.new_context(viewport={"width": width, "height": height})
            else:
                exe = cfg.executable if os.path.isabs(cfg.executable) else shutil.which(cfg.executable)
                if not exe or not os.path.exists(exe):
                    raise BrowserStartError(f"chromium not found at {cfg.executable!r} (apt-get install -y chromium)")
                self._browser = await self._pw.chromium.launch(executable_path=exe, headless=cfg.headless,
                                                               args=cfg.launch_args(), timeout=cfg.launch_timeout * 1000)
                self._context = await self._browser.new_context(viewport={"width": width, "height": height},
                                                                device_scale_factor=1, locale="en-US",
                                                                timezone_id="UTC", service_workers="block")
        except BrowserStartError:
            await self.close()
            raise
        except Exception as exc:  # playwright errors: the browser is unusable
            await self.close()
            where = cfg.cdp_url or cfg.executable
            raise BrowserStartError(f"cannot start browser ({where}): {str(exc).splitlines()[0]}") from exc
        self._context.set_default_navigation_timeout(cfg.navigation_timeout * 1000)
        self._context.set_default_timeout(cfg.navigation_timeout * 1000)
        self._context.on("page", self._on_page)
        self._context.on("request", self._on_request)
        self._context.on("requestfinished", self._on_request_done)
        self._context.on("requestfailed", self._on_request_done)
        await self._context.new_page()
        return self

    def _on_page(self, page: Any) -> None:
        """New tabs and popups join the tab list and become active; closed ones leave it."""
        if page in self.pages:
            return
        self.pages.append(page)
        self.active = len(self.pages) - 1
        page.on("close", lambda p=page: self._on_close(p))

    def _on_request(self, request: Any) -> None:
        if request.is_navigation_request():
            self._navigating.add(request)

    def _on_request_done(self, request: Any) -> None:
        self._navigating.discard(request)

    async def settle(self, grace: float, timeout: float) -> None:
        """Wait ``grace`` seconds for a navigation an action may have started, then until no
        navigation request is in flight (a submitted form has reached the server) and the
        active tab's document is loaded — at most ``timeout`` seconds in all."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await asyncio.sleep(grace)
        while self._navigating and loop.time() < deadline:
            await asyncio.sleep(0.05)
        left = deadline - loop.time()
        if left > 0 and self.pages:
            try:
                await self.page.wait_for_load_state("domcontentloaded", timeout=left * 1000)
            except Exception as exc:  # noqa: BLE001 - a slow page is the agent's to handle (wait action)
                log.debug("page not loaded after settling: %s", exc)

    def _on_close(self, page: Any) -> None:
        if page in self.pages:
            index = self.pages.index(page)
            self.pages.remove(page)
            if self.active >= index and self.active > 0:
                self.active -= 1

    async def new_tab(self) -> Any:
        page = await self._context.new_page()
        self._on_page(page)
        self.active = self.pages.index(page)
        return page

    async def focus(self, index: int) -> Any:
        if not 0 <= index < len(self.pages):
            raise IndexError(f"no tab {index} (open tabs: 0..{len(self.pages) - 1})")
        self.active = index
        await self.page.bring_to_front()
        return self.page

    async def screenshot(self) -> bytes:
        """PNG of the active tab's viewport."""
        return await self.page.screenshot(type="png", timeout=self.config.navigation_timeout * 1000)

    async def tabs(self) -> list[tuple[str, str]]:
        """``(title, url)`` of every tab, in order."""
        out = []
        for p in self.pages:
            try:
                title = await p.title()
            except Exception:  # noqa: BLE001 - a tab mid-navigation has no title yet
                title = ""
            out.append((title, p.url))
        return out

    async def close(self) -> None:
        for closer in (self._context if self._owns_context else None, self._browser, self._pw):
            if closer is None:
                continue
            try:
                await (closer.stop() if closer is self._pw else closer.close())
            except Exception as exc:  # noqa: BLE001 - best effort at teardown
                log.debug("browser teardown: %s", exc)
        self._context = self._browser = self._pw = None
        self.pages = []

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
