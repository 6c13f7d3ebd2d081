"""The ``computer`` tool (Kimi-Agent-style action space, the paper's Table A2) on a
:class:`~environments.computer.desktop.DesktopSession`: argument validation, normalized
[0, 1] coordinates → pixels, and the xdotool commands of each action.

:func:`xdotool_steps` is pure (an action → the xdotool argument lists it runs), so the
mapping is testable without a display; :class:`ComputerTool` runs them. Every failure
becomes an observation string (the model learns from it); nothing raises to the loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from environments.computer.desktop import DesktopError, DesktopSession

ACTIONS = (
    "left_click", "right_click", "middle_click", "double_click", "triple_click", "left_press", "mouse_move",
    "left_click_drag", "left_mouse_down", "left_mouse_up", "key", "type", "hold_key", "key_down", "key_up",
    "scroll", "hscroll", "screenshot", "wait", "terminate", "done", "fail",
)
_NEEDS_XY = {"left_click", "right_click", "middle_click", "double_click", "triple_click", "left_press",
             "mouse_move", "left_click_drag"}
_NEEDS_TEXT = {"key", "type", "hold_key", "key_down", "key_up"}
MAX_WAIT = 10.0
TYPE_DELAY_MS = 8

#: Common key spellings → X keysyms (xdotool accepts keysyms and ``a+b`` chords).
_KEYS = {
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "space": "space", "home": "Home",
    "end": "End", "pageup": "Prior", "page_up": "Prior", "pagedown": "Next", "page_down": "Next",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right", "insert": "Insert",
    "ctrl": "ctrl", "control": "ctrl", "alt": "alt", "shift": "shift", "super": "super", "win": "super",
    "cmd": "super", "meta": "super", "capslock": "Caps_Lock", "printscreen": "Print",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}


class ComputerArgs(BaseModel):
    """Arguments of one ``computer`` call."""

    model_config = ConfigDict(extra="ignore")

    action: Literal[ACTIONS]  # type: ignore[valid-type]
    coordinate: tuple[float, float] | None = None
    start_coordinate: tuple[float, float] | None = None
    text: str | None = None
    direction: Literal["up", "down", "left", "right"] | None = None
    amount: int = Field(default=3, ge=1, le=50)
    duration: float = Field(default=1.0, ge=0.0, le=MAX_WAIT)
    status: Literal["success", "failure"] | None = None

    @field_validator("coordinate", "start_coordinate")
    @classmethod
    def _unit(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not all(0.0 <= c <= 1.0 for c in v):
            raise ValueError(f"coordinates are normalized to [0, 1], got {list(v)}")
        return v

    def check(self) -> None:
        """Raise ValueError when a required argument of the action is missing."""
        if self.action in _NEEDS_XY and self.coordinate is None:
            raise ValueError(f"action {self.action!r} needs 'coordinate': [x, y] in [0, 1]")
        if self.action == "left_click_drag" and self.start_coordinate is None:
            raise ValueError("action 'left_click_drag' needs 'start_coordinate' and 'coordinate'")
        if self.action in _NEEDS_TEXT and not self.text:
            raise ValueError(f"action {self.action!r} needs 'text'")


def parse_args(raw: dict[str, Any]) -> ComputerArgs:
    """Validated arguments; raises ValueError with a one-line message."""
    try:
        args = ComputerArgs.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
        raise ValueError(f"{where}: {first.get('msg')}") from None
    args.check()
    return args


def to_pixels(xy: tuple[float, float], width: int, height: int) -> tuple[int, int]:
    """Normalized [0, 1] → pixel on a ``width``×``height`` screen (1.0 is the last pixel)."""
    return round(xy[0] * (width - 1)), round(xy[1] * (height - 1))


def keysym(combo: str) -> str:
    """``"Ctrl+S"`` → ``"ctrl+s"``; ``"enter"`` → ``"Return"`` (one chord)."""
    parts = [p.strip() for p in combo.replace(" + ", "+").split("+") if p.strip()]
    return "+".join(_KEYS.get(p.lower(), p if len(p) > 1 else p.lower()) for p in parts)


def key_chords(text: str) -> list[str]:
    """A ``key`` action's text: one or more chords separated by spaces."""
    return [keysym(c) for c in text.split()]


@dataclass
class Step:
    """One thing to do: an xdotool call (``argv``) or a pause (``sleep`` seconds)."""

    argv: list[str] | None = None
    sleep: float = 0.0


def xdotool_steps(args: ComputerArgs, width: int, height: int) -> list[Step]:
    """The xdotool commands for ``args`` (pure; empty for screenshot/terminate)."""
    a = args.action
    move: list[str] = []
    if args.coordinate is not None:
        x, y = to_pixels(args.coordinate, width, height)
        move = ["mousemove", str(x), str(y)]
    clicks = {"left_click": ("1", 1), "right_click": ("3", 1), "middle_click": ("2", 1),
              "double_click": ("1", 2), "triple_click": ("1", 3)}
    if a in clicks:
        button, n = clicks[a]
        rep = ["--repeat", str(n), "--delay", "80"] if n > 1 else []
        return [Step(move + ["click", *rep, button])]
    if a == "mouse_move":
        return [Step(move)]
    if a == "left_press":
        return [Step(move + ["mousedown", "1"]), Step(sleep=args.duration), Step(["mouseup", "1"])]
    if a == "left_click_drag":
        assert args.start_coordinate is not None
        sx, sy = to_pixels(args.start_coordinate, width, height)
        return [Step(["mousemove", str(sx), str(sy), "mousedown", "1"]), Step(sleep=0.1),
                Step(move), Step(sleep=0.1), Step(["mouseup", "1"])]
    if a in ("left_mouse_down", "left_mouse_up"):
        return [Step(move + ["mousedown" if a == "left_mouse_down" else "mouseup", "1"])]
    if a == "key":
        return [Step(["key", "--delay", "50", *key_chords(args.text or "")])]
    if a == "type":
        steps: list[Step] = []
        for i, line in enumerate((args.text or "").split("\n")):
            if i:
                steps.append(Step(["key", "Return"]))
            if line:
                steps.append(Step(["type", "--delay", str(TYPE_DELAY_MS), "--", line]))
        return steps
    if a == "hold_key":
        chord = keysym(args.text or "")
        return [Step(["keydown", chord]), Step(sleep=args.duration), Step(["keyup", chord])]
    if a in ("key_down", "key_up"):
        return [Step(["keydown" if a == "key_down" else "keyup", keysym(args.text or "")])]
    if a in ("scroll", "hscroll"):
        default = "down" if a == "scroll" else "right"
        direction = args.direction or default
        valid = ("up", "down") if a == "scroll" else ("left", "right")
        if direction not in valid:
            raise ValueError(f"{a} direction must be one of {valid}, got {direction!r}")
        button = {"up": "4", "down": "5", "left": "6", "right": "7"}[direction]
        return [Step(move + ["click", "--repeat", str(args.amount), "--delay", "30", button])]
    if a == "wait":
        return [Step(sleep=args.duration)]
    return []  # screenshot, terminate, done, fail


def terminal_status(args: ComputerArgs) -> str | None:
    """"success"/"failure" when the action ends the episode, else None."""
    if args.action == "done":
        return "success"
    if args.action == "fail":
        return "failure"
    if args.action == "terminate":
        return args.status or "success"
    return None


@dataclass
class ActionResult:
    text: str
    terminal: str | None = None  # success | failure when the episode ends
    error: bool = False


class ComputerTool:
    """Runs ``computer`` actions on a desktop; results are observation strings."""

    def __init__(self, session: DesktopSession, settle: float = 0.3) -> None:
        self.session = session
        self.settle = settle

    async def __call__(self, raw: dict[str, Any]) -> ActionResult:
        try:
            args = parse_args(raw)
        except ValueError as exc:
            return ActionResult(f"Error: computer: {exc}", error=True)
        desk = self.session.desktop
        if desk is None:
            return ActionResult("Error: computer: the desktop is not running", error=True)
        try:
            steps = xdotool_steps(args, desk.width, desk.height)
            for step in steps:
                if step.argv:
                    await self.session.xdotool(*step.argv)
                if step.sleep:
                    await asyncio.sleep(step.sleep)
        except (DesktopError, ValueError) as exc:
            return ActionResult(f"Error: computer {args.action}: {exc}", error=True)
        if steps and args.action not in ("wait", "mouse_move"):
            await asyncio.sleep(self.settle)  # let the app repaint before the next screenshot
        status = terminal_status(args)
        if status is not None:
            return ActionResult(f"episode ended: {status}", terminal=status)
        return ActionResult(f"{args.action} done")


COMPUTER_TOOL_SPEC: dict[str, Any] = {
    "name": "computer",
    "description": (
        "Use the mouse and keyboard on the desktop you see in the screenshots. Coordinates are "
        "[x, y] normalized to [0, 1] from the top-left corner of the screen. Actions: left_click, "
        "right_click, middle_click, double_click, triple_click, left_press (press and hold for "
        "'duration'), mouse_move, left_click_drag (from 'start_coordinate' to 'coordinate'), "
        "left_mouse_down, left_mouse_up, key (xdotool chord(s) in 'text', e.g. 'ctrl+s'), type "
        "('text'), hold_key / key_down / key_up ('text'), scroll ('direction' up|down, 'amount'), "
        "hscroll (left|right), screenshot, wait ('duration' seconds), terminate ('status' "
        "success|failure; also done / fail)."),
    "input_schema": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            "start_coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            "text": {"type": "string"},
            "direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "amount": {"type": "integer", "minimum": 1},
            "duration": {"type": "number", "minimum": 0},
            "status": {"type": "string", "enum": ["success", "failure"]},
        },
        "required": ["action"],
    },
}
