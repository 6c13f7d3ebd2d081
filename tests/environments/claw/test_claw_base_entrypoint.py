"""The real ``openforge/claw-base`` image (for Harbor): its build context and its ENTRYPOINT,
which starts a claw task's services outside our sandboxes and stays out of the way inside
them. The image itself is built and run by ``harbor run`` in tests/test_harbor_run.py."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

from environments.claw.docker import (
    CA_BUNDLE,
    ENTRYPOINT,
    base_context,
    base_dockerfile,
)

ENTRY = Path(__file__).resolve().parents[3] / "environments" / "claw" / "entrypoint.sh"


def test_base_dockerfile_entrypoint_and_ca_bundle() -> None:
    plain = base_dockerfile()
    assert f'ENTRYPOINT ["/bin/sh", "{ENTRYPOINT}"]' in plain and CA_BUNDLE not in plain
    assert ENTRYPOINT.endswith("/environments/claw/entrypoint.sh")
    with_ca = base_dockerfile(ca_bundle=True)
    assert f"COPY {CA_BUNDLE} /tmp/{CA_BUNDLE}" in with_ca and f"--cert /tmp/{CA_BUNDLE}" in with_ca


def test_base_context_is_the_dockerfile_and_our_packages_only(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    with tarfile.open(fileobj=io.BytesIO(base_context(ca_bundle=ca))) as tar:
        names = tar.getnames()
        assert tar.extractfile("Dockerfile").read().decode() == base_dockerfile(ca_bundle=True)
    assert CA_BUNDLE in names and "environments/claw/entrypoint.sh" in names and "openforge/settings.py" in names
    assert {n.split("/")[0] for n in names} == {"Dockerfile", CA_BUNDLE, "openforge", "environments"}
    assert not [n for n in names if "__pycache__" in n]


def _entrypoint(tmp_path: Path, env: dict[str, str], *cmd: str) -> subprocess.CompletedProcess[str]:
    ready = tmp_path / "ready.json"
    full = {k: v for k, v in os.environ.items() if k != "OPENFORGE_SANDBOX_ID"}
    full |= {"PATH": f"{Path(sys.executable).parent}:{full['PATH']}", "CLAW_PORT": "0",
             "CLAW_READY_FILE": str(ready), "CLAW_LOG_FILE": str(tmp_path / "claw.log"), **env}
    return subprocess.run(["/bin/sh", str(ENTRY), *cmd], capture_output=True, text=True, env=full, timeout=120,
                          check=False)


def test_entrypoint_starts_the_services_then_runs_the_command(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples" / "claw-kb-answer-ticket"
    run = _entrypoint(tmp_path, {"CLAW_SERVICES": "kb,helpdesk", "CLAW_FIXTURES": str(fixtures / "environment" / "fixtures")},
                      "sh", "-c", 'cat "$CLAW_READY_FILE"')
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout)
    try:
        with urllib.request.urlopen(f"{info['url']}/helpdesk/state", timeout=10) as resp:
            tickets = json.load(resp)["state"]["tickets"]
        assert any(t["id"] == "T-2207" for t in tickets)
    finally:
        os.kill(int(info["pid"]), signal.SIGTERM)


def test_entrypoint_inside_our_sandbox_only_runs_the_command(tmp_path: Path) -> None:
    run = _entrypoint(tmp_path, {"CLAW_SERVICES": "kb", "OPENFORGE_SANDBOX_ID": "r1"}, "echo", "hi")
    assert (run.returncode, run.stdout) == (0, "hi\n")
    assert not (tmp_path / "ready.json").exists() and not (tmp_path / "claw.log").exists()
    no_services = _entrypoint(tmp_path, {"CLAW_SERVICES": ""}, "echo", "plain")
    assert no_services.stdout == "plain\n" and not (tmp_path / "ready.json").exists()
