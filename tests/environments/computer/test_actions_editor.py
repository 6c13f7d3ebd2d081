"""The computer-use action layer without a display: argument validation, normalized
coordinates, the xdotool commands of each action, key names, and str_replace_editor."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.computer.actions import (
    ACTIONS,
    key_chords,
    parse_args,
    terminal_status,
    to_pixels,
    xdotool_steps,
)
from environments.computer.editor import Editor


def _argv(raw: dict, w: int = 1920, h: int = 1080) -> list[list[str]]:
    return [s.argv for s in xdotool_steps(parse_args(raw), w, h) if s.argv]


def test_coordinates_are_normalized() -> None:
    assert to_pixels((0.0, 0.0), 1920, 1080) == (0, 0)
    assert to_pixels((1.0, 1.0), 1920, 1080) == (1919, 1079)
    assert to_pixels((0.5, 0.25), 1280, 720) == (640, 180)
    with pytest.raises(ValueError, match=r"normalized to \[0, 1\]"):
        parse_args({"action": "left_click", "coordinate": [960, 540]})


@pytest.mark.parametrize(("raw", "want"), [
    ({"action": "left_click", "coordinate": [0.5, 0.5]}, [["mousemove", "960", "540", "click", "1"]]),
    ({"action": "right_click", "coordinate": [0, 0]}, [["mousemove", "0", "0", "click", "3"]]),
    ({"action": "middle_click", "coordinate": [0, 0]}, [["mousemove", "0", "0", "click", "2"]]),
    ({"action": "double_click", "coordinate": [0, 0]}, [["mousemove", "0", "0", "click", "--repeat", "2", "--delay", "80", "1"]]),
    ({"action": "triple_click", "coordinate": [0, 0]}, [["mousemove", "0", "0", "click", "--repeat", "3", "--delay", "80", "1"]]),
    ({"action": "mouse_move", "coordinate": [1, 1]}, [["mousemove", "1919", "1079"]]),
    ({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1, 1]},
     [["mousemove", "0", "0", "mousedown", "1"], ["mousemove", "1919", "1079"], ["mouseup", "1"]]),
    ({"action": "left_mouse_down"}, [["mousedown", "1"]]),
    ({"action": "left_mouse_up", "coordinate": [0, 1]}, [["mousemove", "0", "1079", "mouseup", "1"]]),
    ({"action": "left_press", "coordinate": [0, 0]}, [["mousemove", "0", "0", "mousedown", "1"], ["mouseup", "1"]]),
    ({"action": "key", "text": "Ctrl+S"}, [["key", "--delay", "50", "ctrl+s"]]),
    ({"action": "key", "text": "enter esc"}, [["key", "--delay", "50", "Return", "Escape"]]),
    ({"action": "type", "text": "a b\n\nc"}, [["type", "--delay", "8", "--", "a b"], ["key", "Return"], ["key", "Return"],
                                             ["type", "--delay", "8", "--", "c"]]),
    ({"action": "hold_key", "text": "shift", "duration": 0.1}, [["keydown", "shift"], ["keyup", "shift"]]),
    ({"action": "key_down", "text": "alt"}, [["keydown", "alt"]]),
    ({"action": "key_up", "text": "alt"}, [["keyup", "alt"]]),
    ({"action": "scroll", "coordinate": [0, 0], "direction": "up", "amount": 2},
     [["mousemove", "0", "0", "click", "--repeat", "2", "--delay", "30", "4"]]),
    ({"action": "scroll"}, [["click", "--repeat", "3", "--delay", "30", "5"]]),
    ({"action": "hscroll", "direction": "left", "amount": 1}, [["click", "--repeat", "1", "--delay", "30", "6"]]),
    ({"action": "screenshot"}, []),
    ({"action": "wait", "duration": 0.2}, []),
    ({"action": "terminate", "status": "failure"}, []),
])
def test_action_to_xdotool(raw: dict, want: list[list[str]]) -> None:
    assert _argv(raw) == want


def test_every_action_of_the_table_is_accepted() -> None:
    assert len(ACTIONS) == 22
    for action in ACTIONS:
        raw: dict = {"action": action, "coordinate": [0.1, 0.2], "start_coordinate": [0.3, 0.4], "text": "a",
                     "duration": 0.0}
        xdotool_steps(parse_args(raw), 100, 100)


@pytest.mark.parametrize(("raw", "msg"), [
    ({"action": "left_click"}, "needs 'coordinate'"),
    ({"action": "left_click_drag", "coordinate": [0, 0]}, "start_coordinate"),
    ({"action": "type"}, "needs 'text'"),
    ({"action": "fly"}, "action"),
    ({"action": "wait", "duration": 99}, "duration"),
])
def test_bad_arguments_are_one_line_errors(raw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg) as err:
        parse_args(raw)
    assert "\n" not in str(err.value)


def test_scroll_direction_must_match_the_axis() -> None:
    with pytest.raises(ValueError, match="direction"):
        xdotool_steps(parse_args({"action": "hscroll", "direction": "up"}), 10, 10)


def test_terminate_and_aliases() -> None:
    assert terminal_status(parse_args({"action": "terminate", "status": "failure"})) == "failure"
    assert terminal_status(parse_args({"action": "terminate"})) == "success"
    assert terminal_status(parse_args({"action": "done"})) == "success"
    assert terminal_status(parse_args({"action": "fail"})) == "failure"
    assert terminal_status(parse_args({"action": "screenshot"})) is None
    assert key_chords("super+e page_down") == ["super+e", "Next"]


def test_str_replace_editor(tmp_path: Path) -> None:
    ed = Editor(tmp_path)
    assert ed({"command": "create", "path": "a.txt", "file_text": "one\ntwo\n"}).startswith("created")
    assert "     2\ttwo" in ed({"command": "view", "path": "a.txt"})
    assert ed({"command": "view", "path": "a.txt", "view_range": [2, 2]}) == "     2\ttwo"
    assert ed({"command": "str_replace", "path": "a.txt", "old_str": "o", "new_str": "0"}).startswith("Error: old_str occurs 2 times")
    assert ed({"command": "str_replace", "path": "a.txt", "old_str": "two", "new_str": "2"}) == f"edited {tmp_path / 'a.txt'}"
    assert ed({"command": "insert", "path": "a.txt", "insert_line": 0, "new_str": "zero"}).startswith("inserted 1")
    assert (tmp_path / "a.txt").read_text() == "zero\none\n2\n"
    assert ed({"command": "undo_edit", "path": "a.txt"}).startswith("undid the last edit")
    assert (tmp_path / "a.txt").read_text() == "one\n2\n"
    ed({"command": "undo_edit", "path": "a.txt"})
    assert ed({"command": "undo_edit", "path": "a.txt"}).startswith("undid the creation")
    assert not (tmp_path / "a.txt").exists()
    assert ed({"command": "undo_edit", "path": "a.txt"}).startswith("Error: no edit to undo")
    assert ed({"command": "insert", "path": "b.txt", "insert_line": 0, "new_str": "x"}).startswith("Error: no such file")
    assert ed({"command": "delete", "path": "a.txt"}).startswith("Error: unknown command")
    assert ed({"command": "view", "path": ""}).startswith("Error: 'path'")
