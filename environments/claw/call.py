"""Call a claw tool from bash (stdlib only, starts fast): used by oracle ``solve.sh`` scripts
and by harnesses that only have a shell (the SKILL.md files teach it).

    claw-call TOOL_NAME '<json args>'      # or '-' to read stdin
    claw-call --list                       # tools hosted at CLAW_URL
    python3 -m environments.claw.call ...  # the same, where the package is importable

Tool ``<service>_<action>`` is ``POST $CLAW_URL/<service>/<action>`` (CLAW_URL defaults to
``http://127.0.0.1:$PORT``, PORT to 8790). Prints the JSON response on stdout. Exit status:
0 success, 1 the service rejected the call (its error JSON is printed), 2 usage error or
services unreachable.

Why a ``claw-call`` command and not only the module form: ``python3 -m environments.claw.call``
resolves only while ``PYTHONPATH`` names the package root (the runner and the claw-base image
set it), and a harness's shell tool may sanitise its environment: OpenClaw's ``exec`` strips
``PYTHONPATH`` (its host-env security policy; it keeps the inherited ``PATH``), so every claw
tool call failed there with "No module named 'environments'". ``environments/claw/bin/claw-call``
is a tiny ``#!/usr/bin/env python3`` script that finds the package from its own real location
(symlinks followed) and runs :func:`main` of this module: it needs nothing from the environment
but ``python3`` on PATH (any python3 works: this module is stdlib-only), and it exposes nothing
the package root on PYTHONPATH did not already (the agent could read the package there before;
tests/ and the verifier's files are not in it). Its folder reaches every harness without
touching the runner: ``Harness.plan`` puts ``environments/<domain>/bin`` of the task's skills
first on the harness's PATH (``environments.domain.skill_bin_dirs``) and, for login shells
whose /etc/profile resets PATH (Codex runs ``bash -lc``), in the scratch HOME's ``.profile``,
whatever backend runs the checkout (bubblewrap, docker, kubernetes: the repo is mounted, the
path is derived from it); the self-contained claw-base image also links it as
``/usr/local/bin/claw-call`` (``environments.claw.docker``), on every default PATH. The module
form keeps working where PYTHONPATH is set (solve.sh scripts). A console-script entry point was not
used: its shebang pins the venv interpreter's absolute path at install time, which is not
where backends mount the runtime, and it needs a reinstall of every checkout.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

#: The command the SKILL.md files and the oracle teacher use (environments/claw/bin/claw-call).
COMMAND = "claw-call"
USAGE = f"usage: {COMMAND} TOOL_NAME '<json args>' | --list"


def base_url() -> str:
    url = os.environ.get("CLAW_URL")
    if url:
        return url.rstrip("/")
    return f"http://127.0.0.1:{os.environ.get('PORT') or os.environ.get('CLAW_PORT') or 8790}"


def endpoint_path(tool: str) -> str:
    """``gmail_send`` → ``/gmail/send`` (service names never contain ``_``)."""
    service, sep, action = tool.strip().partition("_")
    if not sep or not service or not action:
        raise ValueError(f"bad tool name {tool!r}: expected <service>_<action>, e.g. gmail_search")
    return f"/{service}/{action}"


def request(method: str, path: str, body: Any = None, *, timeout: float = 30.0) -> tuple[int, Any]:
    """HTTP ``method`` on ``CLAW_URL + path``; returns (status, decoded JSON body)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base_url() + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw or b"null")
    except json.JSONDecodeError:
        return status, {"error": {"type": "bad_response", "message": raw.decode(errors="replace")[:500]}}


def call_tool(tool: str, args: dict[str, Any]) -> tuple[int, Any]:
    """Call ``tool`` with ``args``; returns (HTTP status, response JSON)."""
    return request("POST", endpoint_path(tool), args)


def _emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__ or USAGE)
        return 0 if argv else 2
    try:
        if argv[0] == "--list":
            status, body = request("GET", "/tools")
            if status != 200:
                _emit(body)
                return 1
            for tool in body.get("tools", []):
                sys.stdout.write(f"{tool['name']}: {tool['description']}\n")
            return 0
        tool = argv[0]
        text = argv[1] if len(argv) > 1 else "{}"
        if text == "-":
            text = sys.stdin.read() or "{}"
        try:
            args = json.loads(text)
        except json.JSONDecodeError as exc:
            sys.stderr.write(f"error: arguments are not valid JSON ({exc}); {USAGE}\n")
            return 2
        if not isinstance(args, dict):
            sys.stderr.write(f"error: arguments must be a JSON object, got {type(args).__name__}\n")
            return 2
        status, body = call_tool(tool, args)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        sys.stderr.write(f"error: claw services unreachable at {base_url()} ({reason})\n")
        return 2
    _emit(body)
    return 0 if 200 <= status < 300 else 1


if __name__ == "__main__":
    raise SystemExit(main())
