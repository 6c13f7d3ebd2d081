"""Dockerfile templates of claw tasks.

No public registry is reachable here, so ``FROM`` names are OpenForge image names that the
docker backend resolves through its alias table (and builds locally):

- ``openforge/claw-base:bookworm`` — :func:`base_dockerfile`, built with the repository root
  as context: Debian bookworm + python3 venv with the service deps + ``environments/`` at
  ``/opt/openforge/src`` (so ``python3 -m environments.claw.serve|call`` and the runner work).
- ``openforge/harnesses:bookworm`` — the harness CLIs under ``/opt/openforge-tools``
  (scripts/install-harnesses.sh layout); task images copy only the harnesses they need.

:func:`dockerfile_for` is the task's ``environment/Dockerfile`` (context: ``environment/``).
"""

from __future__ import annotations

from environments.claw.services import parse_services

BASE_IMAGE = "openforge/claw-base:bookworm"
DEBIAN_IMAGE = "openforge/base:bookworm"
HARNESS_IMAGE = "openforge/harnesses:bookworm"
TOOLS_DIR = "/opt/openforge-tools"
CLAW_PORT = 8790

#: Python packages the services and the in-sandbox runner need inside the image.
SANDBOX_PIP = (
    "starlette>=0.37", "uvicorn>=0.29", "pydantic>=2.7", "pydantic-settings>=2.3", "tomli-w>=1.0", "httpx>=0.27",
    "openai>=1.40",  # the react harness runs inside the runner
)

_NODE = "RUN apt-get update && apt-get install -y --no-install-recommends nodejs && rm -rf /var/lib/apt/lists/*"
_NODE_MODULES = f"COPY --from={HARNESS_IMAGE} {TOOLS_DIR}/node_modules {TOOLS_DIR}/node_modules"

#: Extra image layers per harness (names as in environments/harnesses). Harnesses that run
#: inside our runner (react, oracle, noop, command) need none; zeroclaw is not obtainable here.
HARNESS_LAYERS: dict[str, tuple[str, ...]] = {
    "codex": (_NODE, _NODE_MODULES),
    "claude-code": (_NODE, _NODE_MODULES),
    "openclaw": (f"COPY --from={HARNESS_IMAGE} {TOOLS_DIR}/openclaw {TOOLS_DIR}/openclaw",),
    "mini-swe-agent": (f"COPY --from={HARNESS_IMAGE} {TOOLS_DIR}/mini-swe-agent {TOOLS_DIR}/mini-swe-agent",),
    "react": (),
    "oracle": (),
    "noop": (),
    "command": (),
    "zeroclaw": ("# zeroclaw: not obtainable from the reachable registries; no layer",),
}
_ALIASES = {"claude": "claude-code", "mini": "mini-swe-agent"}


def base_dockerfile(base: str = DEBIAN_IMAGE) -> str:
    """Dockerfile of ``openforge/claw-base:bookworm`` (build context: the repository root)."""
    pip = " ".join(f'"{p}"' for p in SANDBOX_PIP)
    return (
        "# openforge/claw-base: python3 + the claw services + the in-sandbox runner.\n"
        "# Build from the repository root: docker build -f <this file> -t openforge/claw-base:bookworm .\n"
        f"FROM {base}\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates bash \\\n"
        "    && rm -rf /var/lib/apt/lists/*\n"
        f"RUN python3 -m venv /opt/openforge/venv && /opt/openforge/venv/bin/pip install --no-cache-dir {pip}\n"
        "COPY openforge/ /opt/openforge/src/openforge/\n"
        "COPY environments/ /opt/openforge/src/environments/\n"
        "ENV PATH=/opt/openforge/venv/bin:$PATH PYTHONPATH=/opt/openforge/src PYTHONDONTWRITEBYTECODE=1\n"
        "WORKDIR /app\n"
    )


def harness_layers(harnesses: list[str] | tuple[str, ...]) -> list[str]:
    """The de-duplicated Dockerfile lines that install ``harnesses``."""
    lines: list[str] = []
    for raw in harnesses:
        name = _ALIASES.get(raw, raw)
        if name not in HARNESS_LAYERS:
            raise ValueError(f"unknown harness {raw!r} (known: {', '.join(sorted(HARNESS_LAYERS))})")
        for line in HARNESS_LAYERS[name]:
            if line not in lines:
                lines.append(line)
    return lines


def dockerfile_for(
    services: str | list[str],
    harnesses: list[str] | tuple[str, ...] = (),
    *,
    base: str = BASE_IMAGE,
    port: int = CLAW_PORT,
) -> str:
    """A claw task's ``environment/Dockerfile`` (context ``environment/``: fixtures/, tools.json)."""
    names = ",".join(parse_services(services))
    layers = harness_layers(harnesses)
    lines = [
        f"# claw task sandbox: services {names}" + (f"; harnesses {', '.join(harnesses)}" if harnesses else ""),
        f"FROM {base}",
        *layers,
        *([f"ENV OPENFORGE_TOOLS_DIR={TOOLS_DIR}"] if any(not line.startswith("#") for line in layers) else []),
        "COPY fixtures/ /opt/claw/fixtures/",
        "COPY tools.json /opt/claw/tools.json",
        f"ENV CLAW_SERVICES={names} CLAW_FIXTURES=/opt/claw/fixtures CLAW_PORT={port} CLAW_URL=http://127.0.0.1:{port}",
        "WORKDIR /app",
    ]
    return "\n".join(lines) + "\n"
