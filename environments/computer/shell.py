"""The ``bash`` tool of the computer-use harness: one command, its exit code and output
(runs on the desktop's DISPLAY, so GUI apps started from it appear on screen)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

MAX_OUTPUT = 12_000

BASH_TOOL_SPEC: dict[str, Any] = {
    "name": "bash",
    "description": "Run a bash command in the workspace (on the desktop's DISPLAY); returns exit code and output. "
                   "Start GUI apps in the background with '&'.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


class Shell:
    """Runs ``bash`` tool calls. Output goes to a temp file, not a pipe, so a command that
    leaves a GUI app running in the background (``mousepad f &``) returns at once; every
    call's process group is killed by :meth:`aclose` at the end of the episode."""

    def __init__(self, *, cwd: Path, env: dict[str, str], scratch: Path, timeout: float = 120.0) -> None:
        self.cwd = cwd
        self.env = env
        self.scratch = scratch
        self.timeout = timeout
        self._groups: list[int] = []
        self._n = 0

    async def __call__(self, command: Any) -> str:
        if not isinstance(command, str) or not command.strip():
            return "Error: 'command' must be a non-empty string"
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._n += 1
        out_path = self.scratch / f"bash-{self._n}.out"
        with out_path.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                "bash", "-c", command, cwd=self.cwd, env=self.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=out, stderr=out, start_new_session=True)
        self._groups.append(proc.pid)
        try:
            await asyncio.wait_for(proc.wait(), self.timeout)
        except TimeoutError:
            _killpg(proc.pid)
            await proc.wait()
            return f"Error: command timed out after {self.timeout:g}s"
        text = await asyncio.to_thread(out_path.read_text, encoding="utf-8", errors="replace")
        if len(text) > MAX_OUTPUT:
            half = MAX_OUTPUT // 2
            text = f"{text[:half]}\n... [{len(text) - MAX_OUTPUT} characters cut] ...\n{text[-half:]}"
        return f"exit code: {proc.returncode}\n{text}"

    async def aclose(self) -> None:
        for pgid in self._groups:
            _killpg(pgid)
        self._groups.clear()


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
