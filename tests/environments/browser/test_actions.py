"""The browser action space: parsing model replies into Table A3 actions (and refusing junk
with a message the model can act on)."""

from __future__ import annotations

import pytest

from environments.browser.actions import (
    ACTION_NAMES,
    ActionParseError,
    action_from_dict,
    parse_action,
)
from environments.browser.executor import normalise_keys, normalise_url


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"action": "click", "x": 412, "y": 230}', {"action": "click", "x": 412, "y": 230, "button": "left", "clicks": 1}),
    ('I will search.\n```json\n{"name": "left_click", "arguments": {"coordinate": [5, "6"]}}\n```',
     {"action": "click", "x": 5, "y": 6, "button": "left", "clicks": 1}),
    ('{"action": "double_click", "x": 1, "y": 2}', {"action": "click", "x": 1, "y": 2, "button": "left", "clicks": 2}),
    ('{"action": {"goto": {"url": "shop.test"}}}', {"action": "goto", "url": "shop.test"}),
    ('{"action": "scroll", "direction": "up", "amount": 250}', {"action": "scroll", "amount": -250, "x": None, "y": None}),
    ('{"action": "hscroll", "dx": 300}', {"action": "hscroll", "amount": 300, "x": None, "y": None}),
    ('{"action": "drag", "from": [10, 20], "to": [30, 40]}', {"action": "drag", "x": 10, "y": 20, "to_x": 30, "to_y": 40}),
    ('{"action": "press", "key": "ctrl+a"}', {"action": "key", "keys": "ctrl+a"}),
    ('Thought: done.\nAction: {"action": "answer", "text": "8080"}', {"action": "answer", "text": "8080"}),
    ('{"action": "done"}', {"action": "terminate", "status": "success"}),
    ('{"action": "fail"}', {"action": "terminate", "status": "failure"}),
    ('{"action": "tab_focus", "tab": "1"}', {"action": "tab_focus", "index": 1}),
    ('{"action": "new_tab"}', {"action": "new_tab", "url": None}),
    ('{"action": "wait"}', {"action": "wait", "seconds": 1.0}),
    ('{"action": "go_back"}', {"action": "go_back"}),
    ('{"action": "mouse_move", "x": 3, "y": 4}', {"action": "mouse_move", "x": 3, "y": 4}),
    ('{"action": "type", "text": "wireless mouse"}', {"action": "type", "text": "wireless mouse"}),
])
def test_replies_parse_to_actions(reply: str, expected: dict) -> None:
    assert parse_action(reply).model_dump() == expected


def test_every_table_a3_action_is_accepted() -> None:
    assert set(ACTION_NAMES) == {"click", "mouse_move", "drag", "type", "key", "scroll", "hscroll", "goto", "go_back",
                                 "new_tab", "tab_focus", "wait", "terminate", "answer"}


@pytest.mark.parametrize(("reply", "message"), [
    ("", "empty reply"),
    ("I think I should click the button", "no JSON object"),
    ('{"action": "fly", "to": "moon"}', "unknown action 'fly'"),
    ('{"action": "click", "x": 10}', "'y' is required"),
    ('{"action": "click", "x": 1, "y": 2, "force": true}', "'force' is not an argument of click"),
    ('{"x": 1, "y": 2}', 'no "action" key'),
    ('{"action": "tab_focus", "index": -1}', "index"),
])
def test_malformed_replies_name_the_problem(reply: str, message: str) -> None:
    with pytest.raises(ActionParseError, match=message):
        parse_action(reply)


def test_first_valid_object_wins_over_earlier_junk() -> None:
    assert parse_action('{"note": 1} then {"action": "go_back"}').model_dump() == {"action": "go_back"}


def test_solution_dicts_are_strict() -> None:
    assert action_from_dict({"action": "key", "keys": "Enter"}).describe() == "key(keys='Enter')"
    with pytest.raises(ActionParseError):
        action_from_dict({"action": "click", "target": "#x"})


def test_describe_is_compact() -> None:
    assert parse_action('{"action": "click", "x": 12.0, "y": 30}').describe() == "click(x=12, y=30)"
    assert parse_action('{"action": "terminate"}').describe() == "terminate(status='success')"


@pytest.mark.parametrize(("keys", "combo"), [("enter", "Enter"), ("ctrl+a", "Control+a"), (["cmd", "Shift", "t"], "Meta+Shift+t"),
                                             ("Page_Down", "PageDown"), ("f5", "F5"), ("esc", "Escape")])
def test_key_names_are_normalised(keys, combo) -> None:
    assert normalise_keys(keys) == combo


def test_urls_get_a_scheme() -> None:
    assert normalise_url("shop.test/cart") == "http://shop.test/cart"
    assert normalise_url("https://x.test") == "https://x.test"
    assert normalise_url("about:blank") == "about:blank"
