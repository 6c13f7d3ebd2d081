"""Environments room: the task-directory format, domain families (claw mock services,
GUI bases), harness adapters and the in-sandbox rollout runner. Never imports ``training``."""

import sys as _sys

# httpx imports its command-line client (click, rich, pygments: ~55 ms of CPU, half of
# `import httpx`) whenever those happen to be installed; no process of ours runs that CLI. The
# runner and the react harness import httpx in every sandbox, so each rollout paid it twice.
# httpx falls back to a stub ``httpx.main`` when ``httpx._main`` cannot be imported.
if "httpx" not in _sys.modules:
    _sys.modules.setdefault("httpx._main", None)  # type: ignore[assignment]
