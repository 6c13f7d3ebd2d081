"""SKILL.md files for harnesses that cannot register custom tools (Codex, OpenClaw): one
per service, explaining how to call each of its tools from bash with the call CLI
(``claw-call``: on every harness's PATH, see environments/claw/call.py).

    python -m environments.claw.skills --services gmail,kb --out DIR   # DIR/claw-<svc>/SKILL.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from environments.claw.call import COMMAND
from environments.claw.services import get_spec, parse_services
from environments.claw.tools import input_schema

CALL = COMMAND


def _example_value(name: str, prop: dict[str, Any]) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    kind = prop.get("type")
    if kind == "array":
        return ["someone@example.test"] if "email" in str(prop.get("description", "")).lower() else ["..."]
    if kind == "integer":
        return prop.get("default", 1)
    if kind == "number":
        return 100.0
    if kind == "boolean":
        return True
    desc = str(prop.get("description", ""))
    if "YYYY-MM-DD" in desc:
        return "2026-03-04"
    if "ISO 8601" in desc:
        return "2026-03-04T10:00:00Z" if name != "end" else "2026-03-04T10:30:00Z"
    return "..."


def _arg_lines(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    lines = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type", "value")
        if "enum" in prop:
            kind = " | ".join(json.dumps(v) for v in prop["enum"])
        flag = "required" if name in required else "optional"
        default = f", default {json.dumps(prop['default'])}" if "default" in prop else ""
        lines.append(f"- `{name}` ({kind}, {flag}{default}): {prop.get('description', '')}")
    return lines or ["- (no arguments)"]


def skill_md(service: str) -> str:
    """The SKILL.md text of one service."""
    spec = get_spec(service)
    out = [
        "---",
        f"name: claw-{spec.name}",
        f"description: {spec.description} Use these tools through the shell with `{CALL}`.",
        "---",
        "",
        f"# {spec.name} tools",
        "",
        f"{spec.description}",
        "",
        "Call a tool from bash; the result (JSON) is printed on stdout:",
        "",
        "```bash",
        f"{CALL} TOOL_NAME '{{\"arg\": \"value\"}}'",
        "```",
        "",
        "Arguments are one JSON object (quote it with single quotes). On a mistake the tool prints",
        '`{"error": {"message": ..., "hint": ...}}` and exits with status 1: read the message, fix',
        f"the arguments and call again. `{CALL} --list` lists every available tool.",
        "",
    ]
    for action in spec.actions.values():
        schema = input_schema(spec, action.name)
        required = schema.get("required", [])
        example = {n: _example_value(n, schema["properties"][n]) for n in required}
        out += [
            f"## {spec.tool_name(action.name)}",
            "",
            action.description,
            "",
            *_arg_lines(schema),
            "",
            "```bash",
            f"{CALL} {spec.tool_name(action.name)} '{json.dumps(example)}'",
            "```",
            "",
        ]
    return "\n".join(out)


def write_skills(services: str | list[str], dest_dir: str | Path) -> list[Path]:
    """Write ``dest_dir/claw-<service>/SKILL.md`` for each service; returns the paths."""
    paths = []
    for name in parse_services(services):
        path = Path(dest_dir) / f"claw-{name}" / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(skill_md(name), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m environments.claw.skills", description="Write SKILL.md files.")
    parser.add_argument("--services", required=True, help="comma list or 'all'")
    parser.add_argument("--out", help="folder to write claw-<service>/SKILL.md into (default: print)")
    ns = parser.parse_args(argv)
    try:
        if ns.out:
            for path in write_skills(ns.services, ns.out):
                sys.stdout.write(f"{path}\n")
        else:
            for name in parse_services(ns.services):
                sys.stdout.write(skill_md(name) + "\n")
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
