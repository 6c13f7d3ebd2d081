"""The react harness's text action protocol parser."""

from __future__ import annotations

import pytest

from environments.harnesses.react.protocol import ParseError, is_final, parse_action


@pytest.mark.parametrize("text, tool, args", [
    ('Action: {"tool": "bash", "args": {"command": "ls"}}', "bash", {"command": "ls"}),
    ('Thought: look\naction:   {"name": "read_file", "arguments": {"path": "a"}}', "read_file", {"path": "a"}),
    ('Action:\n```json\n{"tool": "bash", "args": "{\\"command\\": \\"pwd\\"}"}\n```', "bash", {"command": "pwd"}),
    ('I will call {"tool": "gmail_search", "input": {"query": "x"}} now', "gmail_search", {"query": "x"}),
    ('Action: {"tool": "noop"}', "noop", {}),
    ('Action: {"tool": "bash", "args": {"command": "echo {a}"}} trailing {junk', "bash", {"command": "echo {a}"}),
])
def test_parses_forgiving_actions(text: str, tool: str, args: dict) -> None:
    action = parse_action(text)
    assert (action.tool, action.args) == (tool, args)


@pytest.mark.parametrize("text, message", [
    ("I am thinking about it.", "no action found"),
    ("Action: bash ls", "no JSON object"),
    ('Action: {"args": {"command": "ls"}}', 'needs a "tool" field'),
    ('Action: {"tool": "bash", "args": "{bad"}', "not valid JSON"),
    ('Action: {"tool": "bash", "args": [1, 2]}', "must be a JSON object"),
])
def test_malformed_actions_explain_the_problem(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_action(text)


def test_final_answer_only_without_action() -> None:
    assert is_final("Final Answer: done")
    assert not is_final('Final Answer: soon\nAction: {"tool": "bash", "args": {}}')
    assert not is_final("still working")


def test_toolbox_without_builtins_offers_and_runs_the_task_tools_only(tmp_path) -> None:  # noqa: ANN001
    import asyncio

    from environments.harnesses.react.tools import BUILTIN_TOOLS, ToolBox

    task_tool = {"name": "contacts_search", "description": "d", "input_schema": {"type": "object"},
                 "endpoint": {"method": "POST", "path": "/contacts/search"}}

    async def run(builtin: bool) -> tuple[list[str], str]:
        box = ToolBox(tmp_path, [task_tool], None, builtin=builtin)
        try:
            return [t["name"] for t in box.specs], await box.call("write_file", {"path": "x.txt", "content": "hi"})
        finally:
            await box.aclose()

    names, out = asyncio.run(run(False))
    assert names == ["contacts_search"] and "unknown tool 'write_file'" in out and not (tmp_path / "x.txt").exists()
    names, out = asyncio.run(run(True))
    assert names == [t["name"] for t in BUILTIN_TOOLS] + ["contacts_search"] and (tmp_path / "x.txt").read_text() == "hi"
