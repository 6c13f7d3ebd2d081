"""The react harness's tools: ``bash``, ``read_file``, ``write_file`` in the workspace, plus
the task's service tools from ``environment/tools.json`` (claw family: ``POST
$CLAW_URL + endpoint.path`` with the arguments as the JSON body).

Every failure becomes an observation string (the model learns from it); nothing raises.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from typing import Any

from environments.harnesses.base import load_tools_file  # noqa: F401 - re-exported
from environments.httpclient import TransportError, request

log = logging.getLogger(__name__)

MAX_OBSERVATION = 12_000
#: Per-operation timeout of a service tool call.
SERVICE_TIMEOUT_S = 60.0

BUILTIN_TOOLS: list[dict[str, Any]] = [
    {"name": "bash", "description": "Run a bash command in the workspace; returns exit code and output.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                      "required": ["command"]}},
    {"name": "read_file", "description": "Read a text file (path relative to the workspace or absolute).",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Write text to a file (creates parent folders; overwrites).",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
]


def truncate(text: str, limit: int = MAX_OBSERVATION) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"


class ToolBox:
    """Runs tool calls; ``specs`` lists every tool (builtins first, task tools after).
    ``builtin = False`` offers the task's tools only (bash / read_file / write_file refused)."""

    def __init__(self, workspace: Path, task_tools: list[dict[str, Any]], services_url: str | None,
                 bash_timeout: float = 120.0, builtin: bool = True) -> None:
        self.workspace = workspace
        self.services_url = (services_url or "").rstrip("/") or None
        self.bash_timeout = bash_timeout
        self.builtin = builtin
        names = {t["name"] for t in BUILTIN_TOOLS}
        self.task_tools = {t["name"]: t for t in task_tools if t["name"] not in names}
        self.specs = (BUILTIN_TOOLS if builtin else []) + list(self.task_tools.values())

    async def aclose(self) -> None:
        """Nothing held open (each service call is its own request); kept for the loop."""

    def openai_tools(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("input_schema") or {"type": "object", "properties": {}}}}
            for t in self.specs]

    async def call(self, name: str, args: dict[str, Any]) -> str:
        try:
            if name in self.task_tools:
                return await self._service(self.task_tools[name], args)
            if self.builtin and name == "bash":
                return await self._bash(str(args.get("command", "")))
            if self.builtin and name == "read_file":
                return self._read(args)
            if self.builtin and name == "write_file":
                return self._write(args)
        except Exception as exc:  # noqa: BLE001 - every failure is an observation
            return f"Error: {name} failed: {type(exc).__name__}: {exc}"
        known = ", ".join(t["name"] for t in self.specs)
        return f"Error: unknown tool {name!r}. Available tools: {known}"

    def _path(self, raw: Any) -> Path:
        if not isinstance(raw, str) or not raw:
            raise ValueError("'path' must be a non-empty string")
        p = Path(raw)
        return p if p.is_absolute() else self.workspace / p

    def _read(self, args: dict[str, Any]) -> str:
        path = self._path(args.get("path"))
        if not path.is_file():
            return f"Error: no such file: {args.get('path')}"
        return truncate(path.read_text(encoding="utf-8", errors="replace"))

    def _write(self, args: dict[str, Any]) -> str:
        path = self._path(args.get("path"))
        content = args.get("content")
        if not isinstance(content, str):
            return "Error: 'content' must be a string"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {args.get('path')}"

    async def _bash(self, command: str) -> str:
        if not command.strip():
            return "Error: 'command' must be a non-empty string"
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", command, cwd=self.workspace, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), self.bash_timeout)
        except TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
            return f"Error: command timed out after {self.bash_timeout:g}s"
        text = out.decode("utf-8", errors="replace")
        return truncate(f"exit code: {proc.returncode}\n{text}")

    async def _service(self, tool: dict[str, Any], args: dict[str, Any]) -> str:
        endpoint = tool.get("endpoint") or {}
        if isinstance(endpoint, str):
            endpoint = {"path": endpoint}
        path = endpoint.get("path") or "/" + tool["name"].replace("_", "/", 1)
        method = str(endpoint.get("method", "POST")).upper()
        base = self.services_url or os.environ.get(tool.get("base_url_env") or "CLAW_URL", "")
        if not path.startswith("http") and not base:
            return f"Error: the service for {tool['name']} is not running (no services URL)"
        url = path if path.startswith("http") else base.rstrip("/") + path
        try:
            resp = await request(method, url, json=args if method != "GET" else None,
                                 params=args if method == "GET" else None, timeout=SERVICE_TIMEOUT_S)
        except TransportError as exc:
            return f"Error: could not reach the service for {tool['name']}: {exc}"
        body = resp.text
        prefix = "" if resp.is_success else f"Error (HTTP {resp.status_code}): "
        return truncate(prefix + body)
