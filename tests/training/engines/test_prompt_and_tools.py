"""Prompt rendering (tool-aware template and plain-template fallback) and tool-call parsing."""

from __future__ import annotations

import copy
import json

import pytest

from training.engines.base import EngineRequestError
from training.engines.local.prompt import render_prompt
from training.engines.local.tools import parse_tool_calls, template_supports_tools

from .conftest import build_tiny_tokenizer

PLAIN_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TOOLS = [{"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}}]
HISTORY = [
    {"role": "system", "content": "Be useful."},
    {"role": "user", "content": "files?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": '{"path": "/tmp"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def test_plain_template_gets_tools_inlined_as_text(tokenizer) -> None:
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = PLAIN_CHATML
    assert not template_supports_tools(PLAIN_CHATML) and template_supports_tools(tokenizer.chat_template)
    text = plain.decode(render_prompt(plain, HISTORY, TOOLS))
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nBe useful.\n\n# Tools") and '"name": "list_files"' in system
    assert ('<|im_start|>assistant\nLooking.\n<tool_call>\n{"name": "list_files", "arguments": {"path": "/tmp"}}\n'
            "</tool_call><|im_end|>") in text
    assert "<|im_start|>user\n<tool_response>\na.txt\n</tool_response><|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")


def test_tool_aware_template_renders_the_same_call_text(tokenizer) -> None:
    text = tokenizer.decode(render_prompt(tokenizer, HISTORY, TOOLS))
    assert ('<|im_start|>assistant\nLooking.\n<tool_call>\n{"name": "list_files", "arguments": {"path": "/tmp"}}\n'
            "</tool_call><|im_end|>") in text
    assert "<|im_start|>tool\n<tool_response>\na.txt\n</tool_response><|im_end|>" in text
    without = tokenizer.decode(render_prompt(tokenizer, HISTORY[:2]))
    assert "<tools>" not in without


def test_bad_tools_and_templates_are_request_errors(tokenizer) -> None:
    with pytest.raises(EngineRequestError, match="'tools' must be a list"):
        render_prompt(tokenizer, HISTORY, tools={"x": 1})  # type: ignore[arg-type]
    bare = copy.deepcopy(tokenizer)
    bare.chat_template = None
    with pytest.raises(EngineRequestError, match="no chat template"):
        render_prompt(bare, HISTORY)


def test_parse_one_call_with_surrounding_text() -> None:
    content, calls = parse_tool_calls('Sure.\n<tool_call>\n{"name": "ls", "arguments": {"path": "/"}}\n</tool_call>')
    assert content == "Sure."
    assert calls[0]["function"] == {"name": "ls", "arguments": '{"path": "/"}'}
    assert calls[0]["type"] == "function" and calls[0]["id"].startswith("call_")


def test_parse_several_calls_string_arguments_and_a_missing_closing_tag() -> None:
    text = ('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>\n'
            '<tool_call>{"name": "b", "arguments": {}}')
    content, calls = parse_tool_calls(text)
    assert content is None
    assert [c["function"]["name"] for c in calls] == ["a", "b"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"x": 1}
    assert len({c["id"] for c in calls}) == 2


@pytest.mark.parametrize("text", [
    "no calls here",
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"arguments": {}}</tool_call>',
    '<tool_call>{"name": "a", "arguments": [1]}</tool_call>',
    '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>oops</tool_call>',
])
def test_unparsable_output_stays_plain_content(text: str) -> None:
    assert parse_tool_calls(text) == (text, [])
