"""Harbor's env tables (``[environment].env``, ``[verifier].env``, ``[solution].env``):
``${VAR}`` / ``${VAR:-default}`` values are resolved from the *host's* environment when a
rollout starts and handed to the sandbox phase that owns them; the resolved values are never
written to the task dir or the DB (the task.toml keeps the templates).

The backend passes them to the in-sandbox runner as one JSON env var, :data:`PHASE_ENV`
(``{"environment": {...}, "verifier": {...}, "solution": {...}}``), which the runner takes out
of its environment before anything starts: ``environment`` goes to every phase (services,
harness, verifier), ``verifier`` to tests/test.sh only, ``solution`` to the oracle only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from environments.taskdir.model import TaskConfig

PHASE_ENV = "OPENFORGE_PHASE_ENV"
_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")


class EnvTemplateError(ValueError):
    """A ``${VAR}`` with no default is not set on the host (one line naming the field)."""


def resolve_table(table: Mapping[str, str], field: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each value that is exactly ``${VAR}`` / ``${VAR:-default}`` from ``environ`` (the host's),
    literals as they are (Harbor's rule)."""
    environ = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key, value in table.items():
        match = _TEMPLATE.fullmatch(str(value))
        if not match:
            out[key] = str(value)
            continue
        var, default = match.group(1), match.group(2)
        if var in environ:
            out[key] = environ[var]
        elif default is not None:
            out[key] = default
        else:
            raise EnvTemplateError(f"task.toml: {field}.{key}: ${{{var}}} is not set on the host (and has no default)")
    return out


def phase_env(config: TaskConfig, environ: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The resolved env of each phase that has one."""
    tables = {"environment": config.environment.env, "verifier": config.verifier.env, "solution": config.solution.env}
    return {phase: resolve_table(t, f"{phase}.env", environ) for phase, t in tables.items() if t}


def encode(phases: dict[str, dict[str, str]]) -> dict[str, str]:
    """``{PHASE_ENV: json}`` for a sandbox's environment (empty when no phase has env)."""
    return {PHASE_ENV: json.dumps(phases, sort_keys=True)} if phases else {}


def take(environ: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The phases' env handed to this process, removed from ``environ`` (default os.environ)."""
    environ = os.environ if environ is None else environ  # type: ignore[assignment]
    raw = environ.pop(PHASE_ENV, None)
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in doc.items() if isinstance(v, dict)}
