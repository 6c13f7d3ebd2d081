"""The computer-use episode: desktop up → (screenshot → action(s)) × steps → desktop down.

The actions come from the model (OpenAI chat through the proxy; each screenshot is a user
turn with an ``image_url`` part, only the last ``history_images`` screenshots are kept in
the prompt) or, in replay mode, from a task's ``solution/actions.json`` (the oracle), so
oracle and policy drive the very same desktop and tools. Every screenshot is saved as
``<log_dir>/screenshots/step_NNN.png``; ``<log_dir>/trajectory.json`` is rewritten after
each step (images by file path, never inline).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from environments.computer.desktop import DesktopConfig, DesktopError, DesktopSession
from environments.computer.spec import DesktopSpec
from environments.gui.observation import image_part, save_screenshot, text_part
from environments.procs import stop_process
from environments.harnesses.computer_use.tools import ToolBox, ToolOutcome, openai_tools
from environments.harnesses.react.loop import classify_bad_request

log = logging.getLogger(__name__)

SYSTEM = (
    "You control a Linux desktop ({width}x{height} pixels) and see it only through screenshots. "
    "Use the `computer` tool for mouse and keyboard (coordinates are [x, y] normalized to [0, 1] "
    "from the top-left), `bash` for shell commands and `str_replace_editor` for text files. "
    "Your working directory is {workspace}. Call one or more tools per turn; after each turn you "
    "get a new screenshot. When the task is complete call computer with action 'terminate' and "
    "status 'success' (or 'failure' if it cannot be done)."
)


@dataclass
class CUConfig:
    instruction: str
    workspace: Path
    log_dir: Path
    home: Path
    desktop: DesktopSpec = field(default_factory=DesktopSpec)
    base_url: str | None = None
    model: str = "policy"
    api_key: str = "openforge-no-token"
    replay: list[dict[str, Any]] | None = None  # oracle plan: [{"tool", "args"}]
    max_steps: int = 30
    history_images: int = 3
    image_width: int | None = None  # downscale screenshots sent to the model (None: full size)
    max_tokens: int | None = None
    temperature: float | None = None
    bash_timeout: float = 120.0
    settle: float = 0.3
    app_timeout: float = 60.0
    request_timeout: float = 600.0


@dataclass
class CUResult:
    status: str  # finished | step_limit | no_action | policy_error | infra_error
    terminal: str | None = None  # success | failure (from terminate)
    steps: int = 0
    n_calls: int = 0
    actions: int = 0
    malformed: int = 0
    screenshots: int = 0
    error_kind: str | None = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


def load_plan(path: Path) -> list[dict[str, Any]]:
    """An oracle plan: a list (or ``{"actions": [...]}``) of ``{"tool", "args"}`` entries."""
    data = json.loads(path.read_text(encoding="utf-8"))
    items = data.get("actions") if isinstance(data, dict) else data
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("tool"), str) for i in items):
        raise ValueError(f"{path}: expected a list of {{'tool', 'args'}} objects")
    return items


class Episode:
    def __init__(self, cfg: CUConfig) -> None:
        self.cfg = cfg
        self.result = CUResult(status="step_limit")
        self.messages: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.session = DesktopSession(
            DesktopConfig(width=cfg.desktop.width, height=cfg.desktop.height,
                          config_home=cfg.workspace / cfg.desktop.config_home if cfg.desktop.config_home else None),
            home=cfg.home, log_path=cfg.log_dir / "desktop.log")

    # -- bookkeeping -------------------------------------------------------------------
    def save(self) -> None:
        self.cfg.log_dir.mkdir(parents=True, exist_ok=True)
        doc = {"model": self.cfg.model, "mode": "replay" if self.cfg.replay is not None else "model",
               "messages": _without_images(self.messages), "steps": self.steps, "result": asdict(self.result)}
        (self.cfg.log_dir / "trajectory.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")

    async def _observe(self, step: int) -> bytes:
        png = await self.session.screenshot()
        await asyncio.to_thread(save_screenshot, self.cfg.log_dir, step, png)
        self.result.screenshots += 1
        return png

    async def _start_apps(self) -> None:
        for app in self.cfg.desktop.apps:
            await self._start_app(app.argv, app.window, self.cfg.app_timeout)

    async def _start_app(self, argv: list[str], window_class: str | None, timeout: float) -> None:
        """Launch an app and, when it names a window class, wait for the window and activate it.

        An app whose window has not shown after a third of ``timeout`` is killed and launched
        again (PCManFM, about 2 starts in 100 under load, builds its window and never maps it);
        a window that never shows is a ``DesktopError``."""
        deadline = time.monotonic() + timeout
        proc = await self.session.launch(argv, cwd=self.cfg.workspace)
        if not window_class:
            return
        relaunch_at = time.monotonic() + timeout / 3
        while True:
            window = await self._visible_window(window_class)
            if window is not None:
                return await self._activate(window, window_class, deadline)
            now = time.monotonic()
            if now > deadline:
                raise DesktopError(f"no window of class {window_class!r} within {timeout:g}s of starting {argv[0]}")
            if relaunch_at is not None and now > relaunch_at:
                log.warning("%s: no %r window after %.0fs; starting it again", argv[0], window_class, timeout / 3)
                await stop_process(proc, grace=1.0)
                proc = await self.session.launch(argv, cwd=self.cfg.workspace)
                relaunch_at = None
            await asyncio.sleep(0.25)

    async def _visible_window(self, window_class: str) -> str | None:
        code, out = await self.session.run(["xdotool", "search", "--onlyvisible", "--class", window_class],
                                           check=False, timeout=10)
        ids = [line.strip() for line in out.splitlines() if line.strip().isdigit()]
        return ids[0] if code == 0 and ids else None

    async def _activate(self, window: str, window_class: str, deadline: float) -> None:
        """Make ``window`` the active one. ``xdotool windowactivate --sync`` waits forever when
        the request reaches the window manager before it manages the new window (seen under
        load in docker sandboxes), so activation is re-sent until ``getactivewindow`` names it."""
        while True:
            await self.session.run(["xdotool", "windowactivate", window], check=False, timeout=10)
            code, active = await self.session.run(["xdotool", "getactivewindow"], check=False, timeout=10)
            if code == 0 and active.strip().splitlines()[-1:] == [window]:
                return
            if time.monotonic() > deadline:
                raise DesktopError(f"window {window_class!r} ({window}) did not become active in time")
            await asyncio.sleep(0.2)

    # -- run -------------------------------------------------------------------------------
    async def run(self) -> CUResult:
        t0 = time.monotonic()
        try:
            try:
                await self.session.start()
                await self._start_apps()
            except DesktopError as exc:
                self.result.status, self.result.error_kind = "infra_error", "start_failed"
                self.result.error = str(exc)
                return self.result
            self.result.timings["desktop_start"] = round(time.monotonic() - t0, 3)
            box = ToolBox(self.session, self.cfg.workspace, self.cfg.home / "shell", bash_timeout=self.cfg.bash_timeout,
                          settle=self.cfg.settle)
            try:
                if self.cfg.replay is not None:
                    await self._run_replay(box)
                else:
                    await self._run_model(box)
            finally:
                await box.aclose()
            return self.result
        except DesktopError as exc:
            self.result.status, self.result.error_kind = "infra_error", "start_failed"
            self.result.error = str(exc)
            return self.result
        finally:
            t_stop = time.monotonic()
            await self.session.stop()
            self.result.timings["desktop_stop"] = round(time.monotonic() - t_stop, 3)
            self.result.timings["total"] = round(time.monotonic() - t0, 3)
            self.save()

    async def _run_replay(self, box: ToolBox) -> None:
        assert self.cfg.replay is not None
        for step, item in enumerate(self.cfg.replay):
            await self._observe(step)
            t = time.monotonic()
            out = await box.call(item["tool"], dict(item.get("args") or {}))
            self.result.steps = step + 1
            self.result.actions += 1
            self.steps.append({"step": step, "tool": item["tool"], "args": item.get("args") or {},
                               "observation": out.text, "screenshot": f"screenshots/step_{step:03d}.png",
                               "seconds": round(time.monotonic() - t, 3)})
            if out.error:
                log.warning("replay step %d (%s) failed: %s", step, item["tool"], out.text)
            if out.terminal:
                self.result.status, self.result.terminal = "finished", out.terminal
                break
            self.save()
        else:
            self.result.status = "finished"
        await self._observe(self.result.steps)  # the final screen

    async def _run_model(self, box: ToolBox) -> None:
        cfg = self.cfg
        if not cfg.base_url:
            self.result.status, self.result.error_kind = "infra_error", "engine_error"
            self.result.error = "no base URL for the model"
            return
        desk = self.session.desktop
        assert desk is not None
        self.messages = [
            {"role": "system", "content": SYSTEM.format(width=desk.width, height=desk.height, workspace=cfg.workspace)},
            {"role": "user", "content": cfg.instruction},
        ]
        client = AsyncOpenAI(base_url=cfg.base_url, api_key=cfg.api_key, max_retries=2, timeout=cfg.request_timeout)
        try:
            for step in range(cfg.max_steps):
                png = await self._observe(step)
                if cfg.image_width:
                    from environments.gui.observation import downscale_png

                    png = await asyncio.to_thread(downscale_png, png, cfg.image_width)
                self.messages.append({"role": "user", "content": [
                    text_part(f"Screenshot after step {step}:"), image_part(png)]})
                _keep_last_images(self.messages, cfg.history_images)
                message = await self._ask(client)
                if message is None:
                    return
                self.result.steps = step + 1
                calls = message.tool_calls or []
                self.messages.append({"role": "assistant", "content": message.content or "",
                                      **({"tool_calls": [c.model_dump(exclude_none=True) for c in calls]} if calls else {})})
                if not calls:
                    self.steps.append({"step": step, "kind": "text", "text": message.content or "",
                                       "screenshot": f"screenshots/step_{step:03d}.png"})
                    self.result.status = "no_action"
                    return
                for call in calls:
                    out = await self._execute(box, call, step)
                    self.messages.append({"role": "tool", "tool_call_id": call.id, "content": out.text})
                    if out.terminal:
                        self.result.status, self.result.terminal = "finished", out.terminal
                        return
                self.save()
            self.result.status = "step_limit"
        finally:
            await client.close()

    async def _execute(self, box: ToolBox, call: Any, step: int) -> ToolOutcome:
        name, raw = call.function.name, call.function.arguments or "{}"
        try:
            args = json.loads(raw) if raw.strip() else {}
            problem = None if isinstance(args, dict) else f"expected a JSON object, got {type(args).__name__}"
        except ValueError as exc:
            args, problem = {}, str(exc)
        if problem is not None:
            self.result.malformed += 1
            out = ToolOutcome(f"Error: the arguments of {name} are not a valid JSON object ({problem})", error=True)
        else:
            out = await box.call(name, args)
            self.result.actions += 1
            if out.error:
                self.result.malformed += 1
        self.steps.append({"step": step, "tool": name, "args": args if problem is None else raw,
                           "observation": out.text, "screenshot": f"screenshots/step_{step:03d}.png"})
        return out

    async def _ask(self, client: AsyncOpenAI) -> Any:
        cfg = self.cfg
        kwargs: dict[str, Any] = {"model": cfg.model, "messages": self.messages, "tools": openai_tools()}
        if cfg.max_tokens is not None:
            kwargs["max_tokens"] = cfg.max_tokens
        if cfg.temperature is not None:
            kwargs["temperature"] = cfg.temperature
        self.result.n_calls += 1
        try:
            resp = await client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            self.result.status, self.result.error_kind = classify_bad_request(str(exc))
            self.result.error = str(exc)[:2000]
            return None
        except (openai.APIConnectionError, openai.APIStatusError) as exc:
            self.result.status, self.result.error_kind = "infra_error", "engine_error"
            self.result.error = f"{type(exc).__name__}: {exc}"[:2000]
            return None
        if not resp.choices:
            self.result.status, self.result.error_kind = "infra_error", "engine_error"
            self.result.error = "engine returned no choices"
            return None
        return resp.choices[0].message


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image_url"


def _keep_last_images(messages: list[dict[str, Any]], keep: int) -> None:
    """Replace all but the last ``keep`` image parts by a short text (bounds the prompt)."""
    seen = 0
    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for i in range(len(content) - 1, -1, -1):
            if _is_image(content[i]):
                seen += 1
                if seen > keep:
                    content[i] = text_part("[earlier screenshot omitted]")


def _without_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            m = {**m, "content": [text_part("[screenshot]") if _is_image(p) else p for p in content]}
        out.append(m)
    return out


async def run_episode(cfg: CUConfig) -> CUResult:
    """Run one episode; never raises for model, engine or desktop failures."""
    return await Episode(cfg).run()
