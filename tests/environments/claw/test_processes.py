"""Real processes: the serve launcher, ClawServer (sync and async) and the call CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from environments.claw.process import ClawServer, ClawStartError, task_services

ROOT = Path(__file__).resolve().parents[3]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "CLAW_PORT", "CLAW_URL", "CLAW_SERVICES", "CLAW_FIXTURES")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _call(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environments.claw.call", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    fx = tmp_path_factory.mktemp("fx")
    (fx / "kb.json").write_text(json.dumps({"articles": [{"id": "KB-1", "title": "Reset links", "body": "valid 2 hours"}]}))
    with ClawServer(["kb", "notes"], fx) as srv:
        yield srv


def test_server_up_and_env(server):
    assert server.env() == {"CLAW_URL": server.url, "PORT": str(server.port)}
    with urllib.request.urlopen(server.url + "/healthz") as resp:
        assert json.load(resp) == {"ok": True, "services": ["kb", "notes"]}


def test_call_cli_success_error_and_usage(server):
    env = _env(CLAW_URL=server.url)
    out = _call(env, "kb_search", '{"query": "reset"}')
    assert out.returncode == 0 and json.loads(out.stdout)["result"]["articles"][0]["id"] == "KB-1"
    out = _call(env, "notes_create", "-", stdin='{"title": "from stdin"}')
    assert out.returncode == 0 and json.loads(out.stdout)["result"]["note"]["title"] == "from stdin"
    out = _call(env, "kb_get_article", '{"id": "KB-404"}')
    assert out.returncode == 1 and json.loads(out.stdout)["error"]["type"] == "not_found"
    out = _call(env, "kb_teleport", "{}")
    assert out.returncode == 1 and json.loads(out.stdout)["error"]["type"] == "unknown_tool"
    out = _call(env, "kb_search", "{broken")
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    out = _call(env, "kb_search", "[]")
    assert out.returncode == 2 and "must be a JSON object" in out.stderr
    out = _call(env, "nounderscore", "{}")
    assert out.returncode == 2 and "<service>_<action>" in out.stderr
    out = _call(env, "--list")
    assert out.returncode == 0 and out.stdout.splitlines()[0].startswith("kb_search: ")
    # PORT fallback when CLAW_URL is unset
    out = _call(_env(PORT=str(server.port)), "notes_list_todos")
    assert out.returncode == 0 and json.loads(out.stdout) == {"result": {"todos": []}}


def test_call_cli_unreachable():
    out = _call(_env(CLAW_URL="http://127.0.0.1:9"), "kb_search", "{}")
    assert out.returncode == 2 and "unreachable at http://127.0.0.1:9" in out.stderr


def test_serve_cli_errors_are_one_line():
    def serve(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "environments.claw.serve", *args], env=_env(**env),
                              capture_output=True, text=True, timeout=60)

    out = serve("--services", "gmail,slack", "--port", "0")
    assert out.returncode == 2 and out.stderr.strip() == (
        "error: unknown claw service 'slack' (known: gmail, calendar, contacts, helpdesk, crm, kb, web, files, notes)")
    out = serve("--port", "0")
    assert out.returncode == 2 and "no services given" in out.stderr
    out = serve("--services", "kb", "--fixtures", "/does/not/exist", "--port", "0")
    assert out.returncode == 2 and "fixtures path does not exist" in out.stderr
    out = serve(PORT="notaport", CLAW_SERVICES="kb")
    assert out.returncode == 2 and "not an integer" in out.stderr


def test_serve_reads_env_and_stops_on_sigterm(tmp_path):
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([sys.executable, "-m", "environments.claw.serve", "--ready-file", str(ready)],
                            env=_env(CLAW_SERVICES="web", PORT="0"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        assert info["pid"] == proc.pid and info["url"].endswith(f":{info['port']}")
        with urllib.request.urlopen(info["url"] + "/healthz") as resp:
            assert json.load(resp)["services"] == ["web"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) in (0, -15)  # uvicorn re-raises SIGTERM after a graceful stop
    assert f"CLAW_READY {info['url']}" in proc.stderr.read()


def test_start_failure_is_reported(tmp_path):
    (tmp_path / "gmail.json").write_text('{"messages": "nope"}')
    with pytest.raises(ClawStartError, match="gmail.json: messages: expected a list"):
        ClawServer(["gmail"], tmp_path).start()
    (tmp_path / "task.toml").write_text('[metadata.openforge]\nservices = "gmail"\n')
    with pytest.raises(ClawStartError, match="metadata.openforge.services"):
        task_services(tmp_path)


async def test_async_server_lifecycle():
    srv = ClawServer(["notes"])
    async with srv:
        with urllib.request.urlopen(srv.url + "/notes/state") as resp:  # tiny local call
            assert json.load(resp)["state"]["notes"] == []
        url = srv.url
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/healthz", timeout=2)


def test_call_cli_needs_only_the_stdlib(server):
    """A python3 without our dependencies (the base interpreter of the venv, or Debian's)
    can still call tools: solve.sh and bash-only harnesses do not need the venv."""
    candidates = [Path(sys.base_prefix) / "bin" / "python3", Path("/usr/bin/python3")]
    bare = next((p for p in candidates if p.exists() and subprocess.run(
        [str(p), "-c", "import pydantic"], capture_output=True).returncode != 0), None)
    if bare is None:
        pytest.skip("no python3 without pydantic on this machine")
    out = subprocess.run([str(bare), "-m", "environments.claw.call", "kb_get_article", '{"id": "KB-1"}'],
                         env=_env(CLAW_URL=server.url), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"]["article"]["title"] == "Reset links"


CLAW_CALL = ROOT / "environments" / "claw" / "bin" / "claw-call"


def _sanitised_env(**extra: str) -> dict[str, str]:
    """What a harness's shell tool may leave (OpenClaw's exec strips PYTHONPATH): no
    PYTHONPATH and no venv; a system PATH plus the folder Harness.plan puts first."""
    env = {k: v for k, v in _env(**extra).items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{CLAW_CALL.parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin"
    return env


def test_claw_call_works_without_pythonpath(server, tmp_path):
    """The SKILL.md command resolves where the shell drops PYTHONPATH: ``claw-call`` on PATH
    finds the package from its own location, run from any cwd and through a symlink (the
    claw-base image links it into /usr/local/bin). The module form does not (the bug)."""
    if not any(Path(d, "python3").exists() for d in ("/usr/local/bin", "/usr/bin", "/bin")):
        pytest.skip("no system python3")
    env = _sanitised_env(CLAW_URL=server.url)
    out = subprocess.run(["bash", "-c", "claw-call kb_get_article '{\"id\": \"KB-1\"}'"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"]["article"]["title"] == "Reset links"
    out = subprocess.run(["bash", "-c", "claw-call --list"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "kb_search: " in out.stdout, out.stderr
    out = subprocess.run(["bash", "-c", "claw-call kb_get_article '{\"id\": \"KB-404\"}'"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and json.loads(out.stdout)["error"]["type"] == "not_found"
    link = tmp_path / "bin" / "claw-call"
    link.parent.mkdir()
    link.symlink_to(CLAW_CALL)
    out = subprocess.run([str(link), "kb_get_article", '{"id": "KB-1"}'], cwd=tmp_path,
                         env={**env, "PATH": "/usr/local/bin:/usr/bin:/bin"}, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["result"]["article"]["id"] == "KB-1", out.stderr
    old = subprocess.run(["bash", "-c", "python3 -m environments.claw.call kb_get_article '{\"id\": \"KB-1\"}'"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert old.returncode != 0 and "No module named 'environments'" in old.stderr


def test_every_harness_gets_the_skill_cli_on_path(tmp_path):
    """Harness.plan puts environments/claw/bin first on the launched harness's PATH when the
    task has claw skills, also for an adapter that sets PATH itself (OpenClaw: Node's bin)."""
    from environments.domain_registry import skill_files
    from environments.harnesses import HarnessContext, get_harness

    for name in ("openclaw", "codex", "claude-code", "mini-swe-agent", "react", "oracle", "command"):
        harness = get_harness(name)
        for skills, expected in ((skill_files(["kb", "notes"]), True), ({}, False)):
            home = tmp_path / name / str(expected)
            (home / "sol").mkdir(parents=True)
            (home / "sol" / "solve.sh").write_text("true\n")
            ctx = HarnessContext(instruction="x", task_dir=tmp_path, workspace=tmp_path, logs_dir=home / "logs",
                                 home=home, solution_dir=home / "sol", skills=skills,
                                 options={"template": "true"} if name == "command" else {})
            try:
                plan = harness.plan(ctx)
            except Exception as exc:  # noqa: BLE001 - a harness not installed here
                if type(exc).__name__ != "HarnessMissing":
                    raise
                continue
            path = plan.env.get("PATH", "").split(os.pathsep)
            assert (path[0] == str(CLAW_CALL.parent)) is expected, (name, path[:3])
            assert path.count(str(CLAW_CALL.parent)) == (1 if expected else 0)


def test_login_shells_find_the_skill_cli(tmp_path):
    """A login shell (Codex runs ``bash -lc``) resets PATH in /etc/profile, then reads the
    scratch HOME's ``.profile`` that Harness.plan writes: claw-call resolves there too."""
    from environments.domain_registry import skill_files
    from environments.harnesses import HarnessContext, get_harness

    home = tmp_path / "home"
    ctx = HarnessContext(instruction="x", task_dir=tmp_path, workspace=tmp_path, logs_dir=tmp_path / "logs", home=home,
                         skills=skill_files(["kb"]), options={"template": "true"})
    plan = get_harness("command").plan(ctx)
    assert home / ".profile" in plan.files
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}  # no PYTHONPATH; what /etc/profile leaves
    out = subprocess.run(["bash", "-lc", "command -v claw-call"], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == str(CLAW_CALL), out.stderr
    out = subprocess.run(["bash", "-lc", ". ~/.profile; echo $PATH"], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().split(os.pathsep).count(str(CLAW_CALL.parent)) == 1  # idempotent
    (home / ".profile").write_text("# the harness's own\n")
    get_harness("command").plan(ctx)  # never overwritten, never written outside the scratch HOME
    assert (home / ".profile").read_text() == "# the harness's own\n"
    from environments.harnesses.base import write_login_profile

    assert write_login_profile(tmp_path / "elsewhere", home, [CLAW_CALL.parent]) == []
    assert not (tmp_path / "elsewhere" / ".profile").exists()
