"""The ``str_replace_editor`` tool: view, create, str_replace, insert, undo_edit on files
(paths relative to the workspace or absolute). One undo history per file for the episode.
Every failure is an observation string starting with ``Error:``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_VIEW = 16_000

EDITOR_TOOL_SPEC: dict[str, Any] = {
    "name": "str_replace_editor",
    "description": (
        "View and edit text files. command: view (file with line numbers, or a directory listing; "
        "optional view_range [start, end]), create (path, file_text), str_replace (path, old_str "
        "that occurs exactly once, new_str), insert (path, insert_line: insert new_str after that "
        "line, 0 = top), undo_edit (path: revert the last edit)."),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer", "minimum": 0},
            "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        },
        "required": ["command", "path"],
    },
}


class Editor:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._history: dict[Path, list[str | None]] = {}

    def __call__(self, args: dict[str, Any]) -> str:
        try:
            command = args.get("command")
            path = self._path(args.get("path"))
            handler = {"view": self.view, "create": self.create, "str_replace": self.str_replace,
                       "insert": self.insert, "undo_edit": self.undo}.get(str(command))
            if handler is None:
                return f"Error: unknown command {command!r} (view, create, str_replace, insert, undo_edit)"
            return handler(path, args)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return f"Error: {exc}"

    def _path(self, raw: Any) -> Path:
        if not isinstance(raw, str) or not raw.strip():
            raise ValueError("'path' must be a non-empty string")
        p = Path(raw)
        return p if p.is_absolute() else self.workspace / p

    def _save(self, path: Path, text: str) -> None:
        before = path.read_text(encoding="utf-8") if path.is_file() else None
        self._history.setdefault(path, []).append(before)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def view(self, path: Path, args: dict[str, Any]) -> str:
        if path.is_dir():
            entries = sorted(p.relative_to(path).as_posix() + ("/" if p.is_dir() else "")
                             for p in path.rglob("*") if len(p.relative_to(path).parts) <= 2)
            return f"{path}:\n" + "\n".join(entries[:500])
        if not path.is_file():
            return f"Error: no such file or directory: {path}"
        lines = path.read_text(encoding="utf-8").split("\n")
        start, end = 1, len(lines)
        rng = args.get("view_range")
        if rng is not None:
            if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(i, int) for i in rng)):
                return "Error: view_range must be [start, end] (1-based; end -1 = last line)"
            start, end = rng[0], (len(lines) if rng[1] == -1 else rng[1])
            if not 1 <= start <= max(end, 1) or end > len(lines):
                return f"Error: view_range {rng} is outside the file's {len(lines)} lines"
        out = "\n".join(f"{i:6d}\t{lines[i - 1]}" for i in range(start, end + 1))
        return out[:MAX_VIEW] + ("\n... [truncated]" if len(out) > MAX_VIEW else "")

    def create(self, path: Path, args: dict[str, Any]) -> str:
        text = args.get("file_text")
        if not isinstance(text, str):
            return "Error: create needs 'file_text' (a string)"
        self._save(path, text)
        return f"created {path} ({len(text)} characters)"

    def str_replace(self, path: Path, args: dict[str, Any]) -> str:
        old, new = args.get("old_str"), args.get("new_str", "")
        if not isinstance(old, str) or not old:
            return "Error: str_replace needs a non-empty 'old_str'"
        if not isinstance(new, str):
            return "Error: 'new_str' must be a string"
        if not path.is_file():
            return f"Error: no such file: {path}"
        text = path.read_text(encoding="utf-8")
        n = text.count(old)
        if n != 1:
            return f"Error: old_str occurs {n} times in {path}; it must occur exactly once"
        self._save(path, text.replace(old, new, 1))
        return f"edited {path}"

    def insert(self, path: Path, args: dict[str, Any]) -> str:
        line, new = args.get("insert_line"), args.get("new_str")
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            return "Error: insert needs 'insert_line' (an integer ≥ 0)"
        if not isinstance(new, str):
            return "Error: insert needs 'new_str' (a string)"
        if not path.is_file():
            return f"Error: no such file: {path}"
        lines = path.read_text(encoding="utf-8").split("\n")
        if line > len(lines):
            return f"Error: insert_line {line} is past the end of the file ({len(lines)} lines)"
        lines[line:line] = new.split("\n")
        self._save(path, "\n".join(lines))
        return f"inserted {len(new.split(chr(10)))} line(s) after line {line} of {path}"

    def undo(self, path: Path, args: dict[str, Any]) -> str:
        history = self._history.get(path)
        if not history:
            return f"Error: no edit to undo for {path}"
        before = history.pop()
        if before is None:
            path.unlink(missing_ok=True)
            return f"undid the creation of {path}"
        path.write_text(before, encoding="utf-8")
        return f"undid the last edit of {path}"
