"""The agent jail (environments/runner/jail.py): a nested PID namespace that leaves nothing
behind, hides the verifier's dirs, and never touches processes that are not its own."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from environments.runner.jail import Jail, choose_jail, userns_available
from environments.procs import run_process

pytestmark = pytest.mark.skipif(not userns_available(), reason="no nested bubblewrap here (bwrap + user namespaces)")


def _pids_running(tag: str) -> list[int]:
    out = []
    for e in os.scandir("/proc"):
        if e.name.isdigit():
            try:
                if tag.encode() in Path(f"/proc/{e.name}/cmdline").read_bytes():
                    out.append(int(e.name))
            except OSError:
                continue
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


async def _run(jail: Jail, script: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    await run_process(jail.wrap(["bash", "-c", script], home=home, env_home=None),
                      env={**os.environ, **jail.env}, cwd=tmp_path, log_path=tmp_path / "log", timeout=30)


async def test_a_setsid_daemon_dies_with_the_userns_jail_but_not_without(tmp_path: Path) -> None:
    daemon = "setsid sleep 300.{} </dev/null >/dev/null 2>&1 & sleep 0.2"
    plain = Jail(kind="none")
    await _run(plain, daemon.format(11), tmp_path)
    survivors = _pids_running("300.11")
    _kill(survivors)
    assert survivors, "without a jail the daemon outlives the harness (else this test proves nothing)"
    jail = choose_jail("userns", agent_uid=None, hidden=[])
    await _run(jail, daemon.format(22), tmp_path)
    await jail.empty()
    assert _pids_running("300.22") == [] and jail.leftovers() == []


async def test_the_verifier_dirs_are_hidden_and_unwritable_from_the_jail(tmp_path: Path) -> None:
    # outside /tmp: the jail has a /tmp of its own, which would hide any dir under it anyway
    root = Path(tempfile.mkdtemp(prefix="openforge-jail-test-", dir=Path.home()))
    try:
        tests = root / "tests"
        tests.mkdir()
        (tests / "secret.sh").write_text("hidden")
        (root / "seen").write_text("not run")
        jail = choose_jail("userns", agent_uid=None, hidden=[tests])
        await _run(jail, f"ls -A {tests} > {root}/seen; echo 1 > {tests}/test.sh", tmp_path)
        await jail.empty()
        assert (root / "seen").read_text() == ""
        assert sorted(p.name for p in tests.iterdir()) == ["secret.sh"]
    finally:
        shutil.rmtree(root)


async def test_emptying_never_kills_another_namespace(tmp_path: Path) -> None:
    other = await asyncio.create_subprocess_exec("bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent",
                                                 "--bind", "/", "/", "--ro-bind", "/proc", "/proc", "--", "sleep", "300.33")
    try:
        for _ in range(250):  # until the foreign sleep is up
            if _pids_running("300.33"):
                break
            await asyncio.sleep(0.02)
        jail = choose_jail("userns", agent_uid=None, hidden=[])
        await _run(jail, "true", tmp_path)
        await jail.empty()
        assert _pids_running("300.33"), "a process of another PID namespace was killed"
    finally:
        other.kill()
        await other.wait()
