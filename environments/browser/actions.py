"""The browser action space (MolmoWeb's Table A3) as JSON actions, and a forgiving parser.

One action per model reply, a JSON object with an ``action`` key::

    {"action": "click", "x": 412, "y": 230}                  # optional "button", "clicks"
    {"action": "mouse_move", "x": 412, "y": 230}
    {"action": "drag", "x": 100, "y": 200, "to_x": 300, "to_y": 200}
    {"action": "type", "text": "wireless mouse"}             # into the focused element
    {"action": "key", "keys": "Enter"}                       # "Control+a", or a list of keys
    {"action": "scroll", "amount": 400}                      # pixels, + down / - up; optional x, y
    {"action": "hscroll", "amount": -200}                    # pixels, + right / - left
    {"action": "goto", "url": "http://shop.test/"}
    {"action": "go_back"}
    {"action": "new_tab"}                                    # optional "url"
    {"action": "tab_focus", "index": 0}
    {"action": "wait", "seconds": 1}
    {"action": "terminate", "status": "success"}             # or "failure"
    {"action": "answer", "text": "The default is 8080."}

Coordinates are CSS pixels of the 1280×720 viewport, origin top-left. :func:`parse_action`
accepts the JSON inside prose or a code fence, ``name``/``type`` for ``action``, arguments
nested under ``arguments``/``args``/``parameters``, numbers as strings, and a few aliases
(``left_click``, ``navigate``, ``press``, ``done`` ...); anything else raises
:class:`ActionParseError` whose message is what the model is told.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def describe(self) -> str:
        """``click(x=412, y=230)``: how the action is shown back to the model."""
        shown = self.model_dump(exclude={"action"}, exclude_defaults=not isinstance(self, Terminate))
        args = ", ".join(f"{k}={_show(v)}" for k, v in shown.items())
        return f"{self.action}({args})"  # type: ignore[attr-defined]


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


class Click(_Action):
    action: Literal["click"]
    x: float
    y: float
    button: Literal["left", "right", "middle"] = "left"
    clicks: int = Field(1, ge=1, le=3)


class MouseMove(_Action):
    action: Literal["mouse_move"]
    x: float
    y: float


class Drag(_Action):
    action: Literal["drag"]
    x: float
    y: float
    to_x: float
    to_y: float


class Type(_Action):
    action: Literal["type"]
    text: str


class Key(_Action):
    action: Literal["key"]
    keys: str | list[str]


class Scroll(_Action):
    action: Literal["scroll"]
    amount: float = 400
    x: float | None = None
    y: float | None = None


class HScroll(_Action):
    action: Literal["hscroll"]
    amount: float = 400
    x: float | None = None
    y: float | None = None


class Goto(_Action):
    action: Literal["goto"]
    url: str = Field(min_length=1)


class GoBack(_Action):
    action: Literal["go_back"]


class NewTab(_Action):
    action: Literal["new_tab"]
    url: str | None = None


class TabFocus(_Action):
    action: Literal["tab_focus"]
    index: int = Field(ge=0)


class Wait(_Action):
    action: Literal["wait"]
    seconds: float = Field(1.0, ge=0, le=30)


class Terminate(_Action):
    action: Literal["terminate"]
    status: Literal["success", "failure"] = "success"


class Answer(_Action):
    action: Literal["answer"]
    text: str


Action = Annotated[Click | MouseMove | Drag | Type | Key | Scroll | HScroll | Goto | GoBack | NewTab | TabFocus | Wait | Terminate | Answer, Field(discriminator="action")]
ACTION_NAMES = ("click", "mouse_move", "drag", "type", "key", "scroll", "hscroll", "goto", "go_back", "new_tab",
                "tab_focus", "wait", "terminate", "answer")
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Action)

_ALIASES = {
    "left_click": "click", "double_click": "click", "right_click": "click", "tap": "click", "move": "mouse_move",
    "hover": "mouse_move", "mousemove": "mouse_move", "left_click_drag": "drag", "type_text": "type", "input": "type",
    "keypress": "key", "press": "key", "key_press": "key", "hotkey": "key", "navigate": "goto", "open_url": "goto",
    "visit": "goto", "back": "go_back", "goback": "go_back", "newtab": "new_tab", "switch_tab": "tab_focus",
    "focus_tab": "tab_focus", "sleep": "wait", "done": "terminate", "stop": "terminate", "finish": "terminate",
    "fail": "terminate", "respond": "answer", "reply": "answer", "send_msg_to_user": "answer", "final_answer": "answer",
    "scroll_down": "scroll", "scroll_up": "scroll",
}
#: Argument aliases per action (model spelling → ours).
_ARG_ALIASES = {
    "click": {"coordinate": "xy", "coordinates": "xy", "point": "xy", "position": "xy", "count": "clicks"},
    "mouse_move": {"coordinate": "xy", "coordinates": "xy", "point": "xy", "position": "xy"},
    "drag": {"from": "xy", "start": "xy", "to": "to_xy", "end": "to_xy", "x1": "x", "y1": "y", "x2": "to_x", "y2": "to_y",
             "start_x": "x", "start_y": "y", "end_x": "to_x", "end_y": "to_y"},
    "type": {"content": "text", "value": "text", "string": "text"},
    "key": {"key": "keys", "combo": "keys", "text": "keys"},
    "scroll": {"delta": "amount", "dy": "amount", "delta_y": "amount", "pixels": "amount"},
    "hscroll": {"delta": "amount", "dx": "amount", "delta_x": "amount", "pixels": "amount"},
    "goto": {"link": "url", "href": "url", "address": "url"},
    "new_tab": {"link": "url"},
    "tab_focus": {"tab": "index", "tab_index": "index", "id": "index"},
    "wait": {"time": "seconds", "duration": "seconds", "secs": "seconds"},
    "terminate": {"result": "status", "success": "status"},
    "answer": {"content": "text", "message": "text", "answer": "text", "response": "text"},
}
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class ActionParseError(ValueError):
    """The reply holds no valid action; ``str(exc)`` is fed back to the model."""


def _json_objects(text: str) -> list[Any]:
    """Every JSON value that starts at a ``{`` in ``text`` (fenced blocks first)."""
    found: list[Any] = []
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        i = chunk.find("{")
        while i != -1:
            try:
                value, end = decoder.raw_decode(chunk, i)
            except ValueError:
                i = chunk.find("{", i + 1)
                continue
            found.append(value)
            i = chunk.find("{", end)
    return found


def _pair(value: Any) -> tuple[Any, Any] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return value[0], value[1]
    if isinstance(value, str) and (m := re.fullmatch(r"\s*\(?\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\)?\s*", value)):
        return m.group(1), m.group(2)
    return None


def _normalise(raw: dict[str, Any]) -> dict[str, Any]:
    data = dict(raw)
    for nest in ("arguments", "args", "parameters", "params", "action_input"):
        inner = data.pop(nest, None)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                inner = None
        if isinstance(inner, dict):
            data = {**inner, **data}
    name = data.pop("action", None) or data.pop("name", None) or data.pop("type", None) or data.pop("action_type", None)
    if isinstance(name, dict) and len(name) == 1:  # {"action": {"click": {"x": 1, "y": 2}}}
        (inner_name, inner_args), = name.items()
        return _normalise({"action": inner_name, **(inner_args if isinstance(inner_args, dict) else {}), **data})
    if not isinstance(name, str):
        raise ActionParseError("the JSON object has no \"action\" key naming one of: " + ", ".join(ACTION_NAMES))
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    original = key
    key = _ALIASES.get(key, key)
    for src, dst in _ARG_ALIASES.get(key, {}).items():
        if src in data and dst not in data:
            data[dst] = data.pop(src)
    for xy, (kx, ky) in (("xy", ("x", "y")), ("to_xy", ("to_x", "to_y"))):
        if xy in data:
            pair = _pair(data.pop(xy))
            if pair is not None:
                data.setdefault(kx, pair[0])
                data.setdefault(ky, pair[1])
    if original == "double_click":
        data.setdefault("clicks", 2)
    if original == "right_click":
        data.setdefault("button", "right")
    if original == "scroll_up" and "amount" in data:
        data["amount"] = -abs(float(data["amount"]))
    if original == "scroll_up" and "amount" not in data:
        data["amount"] = -400
    if key == "scroll" and "direction" in data:
        sign = -1 if str(data.pop("direction")).lower() in ("up", "top") else 1
        data["amount"] = sign * abs(float(data.get("amount", 400)))
    if key == "hscroll" and "direction" in data:
        sign = -1 if str(data.pop("direction")).lower() == "left" else 1
        data["amount"] = sign * abs(float(data.get("amount", 400)))
    if key == "terminate":
        status = data.get("status", "failure" if original == "fail" else "success")
        if isinstance(status, bool):
            status = "success" if status else "failure"
        data["status"] = str(status).lower()
    data.pop("thought", None)
    data.pop("reasoning", None)
    data.pop("description", None)
    data["action"] = key
    return data


def parse_action(text: str) -> Action:
    """The one action in a model reply; raises :class:`ActionParseError` (a model error)."""
    if not text or not text.strip():
        raise ActionParseError("empty reply: answer with one JSON action such as {\"action\": \"click\", \"x\": 100, \"y\": 200}")
    candidates = [c for c in _json_objects(text) if isinstance(c, dict)]
    if not candidates:
        raise ActionParseError("no JSON object found: reply with one JSON action such as "
                               "{\"action\": \"click\", \"x\": 100, \"y\": 200}")
    first_error: str | None = None
    for obj in candidates:
        try:
            data = _normalise(obj)
        except (ActionParseError, ValueError, TypeError) as exc:
            first_error = first_error or str(exc)
            continue
        if data["action"] not in ACTION_NAMES:
            first_error = first_error or (f"unknown action {data['action']!r}; use one of: " + ", ".join(ACTION_NAMES))
            continue
        try:
            return _ADAPTER.validate_python(data)
        except ValidationError as exc:
            first_error = first_error or _describe(data["action"], exc)
    raise ActionParseError(first_error or "no valid action found")


def _describe(action: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"][1:]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"'{loc}' is required")
        elif err["type"] == "extra_forbidden":
            parts.append(f"'{loc}' is not an argument of {action}")
        else:
            parts.append(f"'{loc}': {err['msg']}")
    return f"invalid {action} action: " + "; ".join(parts)


def action_from_dict(data: dict[str, Any]) -> Action:
    """A strict action from a dict (solution files); raises :class:`ActionParseError`."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ActionParseError(_describe(str(data.get("action")), exc)) from None
