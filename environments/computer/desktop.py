"""One virtual desktop for one rollout: Xvfb on a free display, a window manager and the
task's apps, screenshots (PNG) and xdotool input.

Xvfb picks its own free display number (``-displayfd``), so concurrent rollouts on one
host (plain-process sandboxes) never collide; under bubblewrap each sandbox has its own
/tmp and network namespace anyway. Apps run with ``DISPLAY`` set, a writable HOME, the
keyfile GSettings backend (no D-Bus needed) and accessibility bridges off. Everything
started here is in its own process group and is killed by :meth:`DesktopSession.stop`.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from environments.procs import stop_process

log = logging.getLogger(__name__)


class DesktopError(RuntimeError):
    """The desktop could not start (Xvfb, window manager) or an X command failed."""


@dataclass
class DesktopConfig:
    width: int = 1920
    height: int = 1080
    depth: int = 24
    window_manager: str | None = "openbox"
    start_timeout: float = 15.0
    #: PNG zlib level for screenshots (1 = fastest; 6 = Pillow's default).
    png_compress_level: int = 1
    #: Where apps keep their settings (XDG_CONFIG_HOME); None: under the desktop's HOME.
    config_home: Path | None = None


@dataclass
class Desktop:
    """A running desktop: its display and the env apps get."""

    display: str
    width: int
    height: int
    env: dict[str, str] = field(default_factory=dict)


def missing_binaries(names: tuple[str, ...] = ("Xvfb", "xdotool")) -> list[str]:
    return [n for n in names if shutil.which(n) is None]


def app_env(base: dict[str, str], display: str, home: Path, config_home: Path | None = None) -> dict[str, str]:
    """The environment GUI apps run with on ``display`` (app settings under ``config_home``,
    default ``home/.config``; GSettings use the keyfile backend there)."""
    env = dict(base)
    env.update({
        "DISPLAY": display, "HOME": str(home), "XDG_CONFIG_HOME": str(config_home or home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_RUNTIME_DIR": str(home / ".runtime"), "GSETTINGS_BACKEND": "keyfile", "NO_AT_BRIDGE": "1",
        "GTK_A11Y": "none", "GDK_BACKEND": "x11",
    })
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True, mode=0o700)
    return env


class DesktopSession:
    """``async with DesktopSession(cfg, home=..., log_path=...) as desk: ...``."""

    def __init__(self, config: DesktopConfig | None = None, *, home: Path, log_path: Path,
                 env: dict[str, str] | None = None) -> None:
        self.config = config or DesktopConfig()
        self.home = home
        self.log_path = log_path
        self.base_env = dict(env if env is not None else os.environ)
        self.desktop: Desktop | None = None
        self._procs: list[asyncio.subprocess.Process] = []
        self.start_seconds: float | None = None

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> Desktop:
        missing = missing_binaries()
        if missing:
            raise DesktopError(f"desktop needs {', '.join(missing)} (apt-get install -y xvfb xdotool)")
        t0 = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        cfg = self.config
        read_fd, write_fd = os.pipe()
        try:
            xvfb = await self._spawn(
                ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{cfg.width}x{cfg.height}x{cfg.depth}",
                 "-nolisten", "tcp", "-noreset", "-dpi", "96"], self.base_env, pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        try:
            number = await self._read_display(read_fd, xvfb, cfg.start_timeout)
        finally:
            os.close(read_fd)
        display = f":{number}"
        env = app_env(self.base_env, display, self.home, cfg.config_home)
        self.desktop = Desktop(display=display, width=cfg.width, height=cfg.height, env=env)
        if cfg.window_manager:
            if shutil.which(cfg.window_manager) is None:
                raise DesktopError(f"window manager {cfg.window_manager!r} is not installed")
            await self._spawn([cfg.window_manager], env)
            await self._wait_wm(cfg.start_timeout)
        self.start_seconds = time.monotonic() - t0
        log.info("desktop %s %dx%d up in %.2fs", display, cfg.width, cfg.height, self.start_seconds)
        return self.desktop

    async def _read_display(self, fd: int, proc: asyncio.subprocess.Process, timeout: float) -> int:
        os.set_blocking(fd, False)
        buf = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 64)
            except BlockingIOError:
                chunk = None
            if chunk:
                buf += chunk
                if buf.endswith(b"\n"):
                    return int(buf.strip())
            if proc.returncode is not None:
                raise DesktopError(f"Xvfb exited with code {proc.returncode}: {self._log_tail()}")
            await asyncio.sleep(0.02)
        raise DesktopError(f"Xvfb gave no display number within {timeout:g}s: {self._log_tail()}")

    async def _wait_wm(self, timeout: float) -> None:
        """Wait until the window manager owns the screen (EWMH ``_NET_SUPPORTING_WM_CHECK``)."""
        if shutil.which("xprop") is None:
            log.warning("xprop not installed: not waiting for the window manager")
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, out = await self.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], check=False)
            if code == 0 and "window id #" in out:
                return
            await asyncio.sleep(0.05)
        raise DesktopError(f"window manager did not start within {timeout:g}s: {self._log_tail()}")

    async def launch(self, argv: list[str], cwd: Path | None = None) -> asyncio.subprocess.Process:
        """Start an app on the desktop (killed by :meth:`stop`)."""
        if self.desktop is None:
            raise DesktopError("desktop not started")
        if shutil.which(argv[0]) is None:
            raise DesktopError(f"app {argv[0]!r} is not installed")
        return await self._spawn(argv, self.desktop.env, cwd=cwd)

    def process_groups(self) -> list[int]:
        """Process-group ids of everything this session started (Xvfb, WM, apps)."""
        return [p.pid for p in self._procs if p.returncode is None]

    async def stop(self) -> None:
        # every group at once (apps, WM, Xvfb): TERM, 3 s grace, then KILL
        await asyncio.gather(*(stop_process(proc, grace=3.0) for proc in reversed(self._procs)))
        self._procs.clear()
        self.desktop = None

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- X commands ----------------------------------------------------------------------
    async def run(self, argv: list[str], *, check: bool = True, timeout: float = 30.0) -> tuple[int, str]:
        """Run a short X client (xdotool, xprop, ...) on the desktop; (exit code, output)."""
        if self.desktop is None:
            raise DesktopError("desktop not started")
        proc = await asyncio.create_subprocess_exec(
            *argv, env=self.desktop.env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise DesktopError(f"{argv[0]} timed out after {timeout:g}s") from None
        text = out.decode("utf-8", errors="replace")
        if check and proc.returncode != 0:
            raise DesktopError(f"{' '.join(argv[:3])} failed ({proc.returncode}): {text.strip()[:300]}")
        return proc.returncode or 0, text

    async def xdotool(self, *args: str) -> str:
        return (await self.run(["xdotool", *args]))[1]

    async def screenshot(self) -> bytes:
        """The whole screen as PNG bytes (Pillow's X grab, off the event loop)."""
        if self.desktop is None:
            raise DesktopError("desktop not started")
        return await asyncio.to_thread(grab_png, self.desktop.display, self.config.png_compress_level)

    # -- internals -----------------------------------------------------------------------
    async def _spawn(self, argv: list[str], env: dict[str, str], *, cwd: Path | None = None,
                     pass_fds: tuple[int, ...] = ()) -> asyncio.subprocess.Process:
        with self.log_path.open("ab") as logf:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=env, cwd=str(cwd) if cwd else None, stdin=asyncio.subprocess.DEVNULL, stdout=logf,
                stderr=logf, start_new_session=True, pass_fds=pass_fds)
        self._procs.append(proc)
        return proc

    def _log_tail(self, n: int = 400) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n:].strip()
        except OSError:
            return ""


def grab_png(display: str, compress_level: int = 1) -> bytes:
    """Grab ``display``'s root window and encode it as PNG (blocking; call in a thread)."""
    from PIL import ImageGrab

    try:
        img = ImageGrab.grab(xdisplay=display)
    except OSError as exc:
        raise DesktopError(f"screenshot of {display} failed: {exc}") from exc
    out = io.BytesIO()
    (img if img.mode == "RGB" else img.convert("RGB")).save(out, format="PNG", compress_level=compress_level)
    return out.getvalue()
