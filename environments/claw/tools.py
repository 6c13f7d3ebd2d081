"""Tool schemas of the claw services: ``tools.json`` entries (name, description,
input_schema, endpoint) for any subset of services, generated from the services' pydantic
argument models so schemas and servers never drift.

CLI: ``python -m environments.claw.tools --services gmail,kb [--out environment/tools.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from environments.claw.core import ServiceSpec
from environments.claw.services import get_spec, parse_services

BASE_URL_ENV = "CLAW_URL"


def _clean(schema: Any) -> Any:
    """Drop pydantic's ``title`` annotations (noise in a prompt), recursively."""
    if isinstance(schema, list):
        return [_clean(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    schema = dict(schema)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        non_null = [b for b in branches if b != {"type": "null"}]
        if len(non_null) == 1 and len(non_null) < len(branches):
            # Optional[X]: omitting the argument is how a caller says "none"; keep X only.
            del schema["anyOf"]
            schema = {**non_null[0], **schema}
            if schema.get("default", 0) is None:
                del schema["default"]
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(prop) for name, prop in value.items()}
        else:
            out[key] = _clean(value)
    return out


def input_schema(spec: ServiceSpec, action: str) -> dict[str, Any]:
    schema = _clean(spec.actions[action].args.model_json_schema())
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    return schema


def tool_entry(spec: ServiceSpec, action: str) -> dict[str, Any]:
    """One tools.json entry for ``<service>_<action>``."""
    act = spec.actions[action]
    return {
        "name": spec.tool_name(action),
        "service": spec.name,
        "description": act.description,
        "input_schema": input_schema(spec, action),
        "endpoint": {"method": "POST", "path": f"/{spec.name}/{action}"},
    }


def tools_for(services: str | list[str]) -> list[dict[str, Any]]:
    """tools.json entries of every action of ``services`` (names, comma list or ``all``)."""
    return [tool_entry(spec, a) for spec in map(get_spec, parse_services(services)) for a in spec.actions]


def tools_document(services: str | list[str], only: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole ``environment/tools.json`` document; ``only`` keeps just the named tools
    (a task that exposes one tool of a service), in the order given."""
    names = parse_services(services)
    tools = tools_for(names)
    if only is not None:
        by_name = {t["name"]: t for t in tools}
        unknown = [t for t in only if t not in by_name]
        if unknown:
            raise ValueError(f"tools not offered by services {','.join(names)}: {', '.join(unknown)}")
        tools = [by_name[t] for t in only]
    return {"base_url_env": BASE_URL_ENV, "services": names, "tools": tools}


def tools_json_text(services: str | list[str], only: Sequence[str] | None = None) -> str:
    return json.dumps(tools_document(services, only), indent=2) + "\n"


def write_tools_json(services: str | list[str], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tools_json_text(services), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m environments.claw.tools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", required=True, help="comma list of services, or 'all'")
    parser.add_argument("--out", help="write tools.json here instead of stdout")
    ns = parser.parse_args(argv)
    try:
        if ns.out:
            write_tools_json(ns.services, ns.out)
        else:
            sys.stdout.write(tools_json_text(ns.services))
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
