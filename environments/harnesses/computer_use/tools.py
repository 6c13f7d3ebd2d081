"""The computer-use harness's tool box: ``computer`` (desktop actions), ``bash`` and
``str_replace_editor``, their OpenAI tool schemas, and one ``call(name, args)`` entry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.computer.actions import COMPUTER_TOOL_SPEC, ComputerTool
from environments.computer.desktop import DesktopSession
from environments.computer.editor import EDITOR_TOOL_SPEC, Editor
from environments.computer.shell import BASH_TOOL_SPEC, Shell

SPECS = [COMPUTER_TOOL_SPEC, BASH_TOOL_SPEC, EDITOR_TOOL_SPEC]


def openai_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": s["name"], "description": s["description"],
                                              "parameters": s["input_schema"]}} for s in SPECS]


@dataclass
class ToolOutcome:
    text: str
    terminal: str | None = None
    error: bool = False


class ToolBox:
    def __init__(self, session: DesktopSession, workspace: Path, scratch: Path, *, bash_timeout: float = 120.0,
                 settle: float = 0.3) -> None:
        assert session.desktop is not None
        self.computer = ComputerTool(session, settle=settle)
        self.shell = Shell(cwd=workspace, env=session.desktop.env, scratch=scratch, timeout=bash_timeout)
        self.editor = Editor(workspace)

    async def call(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        if name == "computer":
            r = await self.computer(args)
            return ToolOutcome(r.text, r.terminal, r.error)
        if name == "bash":
            text = await self.shell(args.get("command"))
            return ToolOutcome(text, error=text.startswith("Error:"))
        if name == "str_replace_editor":
            text = self.editor(args)
            return ToolOutcome(text, error=text.startswith("Error:"))
        return ToolOutcome(f"Error: unknown tool {name!r} (computer, bash, str_replace_editor)", error=True)

    async def aclose(self) -> None:
        await self.shell.aclose()
