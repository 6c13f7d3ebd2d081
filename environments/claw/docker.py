"""Dockerfile templates of claw tasks.

No public registry is reachable here, so ``FROM`` names are OpenForge image names that the
docker backend resolves through its alias table (and builds locally):

- ``openforge/claw-base:bookworm`` — :func:`base_dockerfile`, built with the repository root
  as context: Debian bookworm + python3 venv with the service deps + ``environments/`` at
  ``/opt/openforge/src`` (so ``python3 -m environments.claw.serve|call`` and the runner work),
  the tool-call CLI linked as ``/usr/local/bin/claw-call`` (:data:`CLAW_CALL`: on the default
  PATH, so it resolves in any shell, whatever the shell strips from the environment),
  and an ENTRYPOINT (``environments/claw/entrypoint.sh``) that starts the task's services
  outside our sandboxes, so a claw task runs as-is in Harbor (``harbor run``). Our docker
  backend does not need it (it maps the name onto its plain base image and mounts our
  runtime); :func:`build_base_image` / ``python -m environments.claw.docker build`` builds it.
- ``openforge/harnesses:bookworm`` — the harness CLIs under ``/opt/openforge-tools``
  (scripts/install-harnesses.sh layout); task images copy only the harnesses they need.

:func:`dockerfile_for` is the task's ``environment/Dockerfile`` (context: ``environment/``).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import tarfile
from pathlib import Path

from environments.claw.services import parse_services

BASE_IMAGE = "openforge/claw-base:bookworm"
DEBIAN_IMAGE = "openforge/base:bookworm"
HARNESS_IMAGE = "openforge/harnesses:bookworm"
TOOLS_DIR = "/opt/openforge-tools"
CLAW_PORT = 8790
#: The claw-base image's ENTRYPOINT (this repo's environments/claw/entrypoint.sh, copied in).
ENTRYPOINT = "/opt/openforge/src/environments/claw/entrypoint.sh"
#: The tool-call CLI in the claw-base image (a link to environments/claw/bin/claw-call, which
#: finds the package from its own real path: it needs no PYTHONPATH; environments/claw/call.py).
CLAW_CALL = "/usr/local/bin/claw-call"
CLAW_CALL_SOURCE = "/opt/openforge/src/environments/claw/bin/claw-call"
_REPO = Path(__file__).resolve().parents[2]

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


#: Where :func:`base_context` puts the host's CA bundle (``ca_bundle``) in the build context.
CA_BUNDLE = "host-ca-bundle.crt"


def base_dockerfile(base: str = DEBIAN_IMAGE, *, ca_bundle: bool = False) -> str:
    """Dockerfile of ``openforge/claw-base:bookworm`` (build context: the repository root).
    ``ca_bundle``: pip trusts the context's :data:`CA_BUNDLE` (a host whose HTTPS goes through
    a proxy with its own CA; the file is used for the install and deleted)."""
    pip = " ".join(f'"{p}"' for p in SANDBOX_PIP)
    cert = f"/tmp/{CA_BUNDLE}"
    install = (f"COPY {CA_BUNDLE} {cert}\n"
               f"RUN python3 -m venv /opt/openforge/venv && /opt/openforge/venv/bin/pip install --no-cache-dir "
               f"--cert {cert} {pip} && rm -f {cert}\n") if ca_bundle else (
               f"RUN python3 -m venv /opt/openforge/venv && /opt/openforge/venv/bin/pip install --no-cache-dir {pip}\n")
    return (
        "# openforge/claw-base: python3 + the claw services + the in-sandbox runner.\n"
        "# Build from the repository root: docker build -f <this file> -t openforge/claw-base:bookworm .\n"
        f"FROM {base}\n"
        "RUN python3 -c 'import ensurepip' 2>/dev/null || (apt-get update \\\n"
        "    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates bash \\\n"
        "    && rm -rf /var/lib/apt/lists/*)\n"
        f"{install}"
        "COPY openforge/ /opt/openforge/src/openforge/\n"
        "COPY environments/ /opt/openforge/src/environments/\n"
        f"RUN chmod 0755 {CLAW_CALL_SOURCE} && ln -sf {CLAW_CALL_SOURCE} {CLAW_CALL}\n"
        "ENV PATH=/opt/openforge/venv/bin:$PATH PYTHONPATH=/opt/openforge/src PYTHONDONTWRITEBYTECODE=1\n"
        "WORKDIR /app\n"
        f'ENTRYPOINT ["/bin/sh", "{ENTRYPOINT}"]\n'
        'CMD ["/bin/bash"]\n'
    )


def host_ca_bundle() -> Path | None:
    """The CA bundle this host's pip trusts (``PIP_CERT``, ``SSL_CERT_FILE``,
    ``REQUESTS_CA_BUNDLE``), if one is set and exists."""
    for var in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def base_context(base: str = DEBIAN_IMAGE, *, ca_bundle: Path | None = None) -> bytes:
    """The build context of :func:`base_dockerfile` as a tar: the Dockerfile plus this
    checkout's ``openforge/`` and ``environments/`` (no caches), never the whole repo;
    ``ca_bundle`` is added as :data:`CA_BUNDLE` for pip."""
    buf = io.BytesIO()
    skip = {"__pycache__", ".pytest_cache", ".mypy_cache"}

    def add(name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(fileobj=buf, mode="w") as tar:
        add("Dockerfile", base_dockerfile(base, ca_bundle=ca_bundle is not None).encode())
        if ca_bundle is not None:
            add(CA_BUNDLE, ca_bundle.read_bytes())
        for top in ("openforge", "environments"):
            tar.add(_REPO / top, arcname=top, filter=lambda ti: None if skip & set(Path(ti.name).parts) else ti)
    return buf.getvalue()


def build_base_image(tag: str = BASE_IMAGE, *, base: str = DEBIAN_IMAGE, docker: str = "docker",
                     timeout: float = 1800) -> str:
    """Build the self-contained ``openforge/claw-base`` image (``docker build --network host``:
    its RUN steps fetch Debian packages when missing and the service deps from PyPI, trusting
    :func:`host_ca_bundle`); returns ``tag``. Raises ``RuntimeError`` with the build's last
    lines on failure."""
    context = base_context(base, ca_bundle=host_ca_bundle())
    proc = subprocess.run([docker, "build", "--network", "host", "--force-rm", "-t", tag, "-"], input=context,
                          capture_output=True, check=False, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()[-15:]
        raise RuntimeError(f"building {tag} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    return tag


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m environments.claw.docker",
                                description="Build the self-contained claw base image (for running claw tasks in Harbor).")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help=f"build {BASE_IMAGE} from this checkout")
    b.add_argument("--tag", default=BASE_IMAGE)
    b.add_argument("--base", default=DEBIAN_IMAGE, help=f"FROM image (default {DEBIAN_IMAGE}, scripts/build-base-image.sh)")
    ns = p.parse_args(argv)
    print(build_base_image(ns.tag, base=ns.base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
