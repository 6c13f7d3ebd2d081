"""Harbor's ``[agent] user`` / ``[verifier] user`` in the runner (environments/runner/users.py,
rollout.py): names and uids resolved in the sandbox's /etc/passwd, the harness run as the
agent user in the ``uid`` jail and tests/test.sh as the verifier user; one-line refusals."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from environments.runner import users
from environments.runner.jail import Jail, JailError, _has_cap
from environments.runner.options import RunnerOptions, parse_options
from environments.runner.rollout import (
    honour_agent_user,
    run_rollout,
    verifier_identity,
)
from environments.runner.users import UserError, resolve_user

PASSWD = "root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1501::/home/agent:/bin/sh\nchecker:x:1600:1600::/home/c:/bin/sh\n"
GROUP = "root:x:0:\nagents:x:1501:\nstaff:x:50:\n"


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "passwd").write_text(PASSWD)
    (tmp_path / "group").write_text(GROUP)
    monkeypatch.setattr(users, "PASSWD", tmp_path / "passwd")
    monkeypatch.setattr(users, "GROUP", tmp_path / "group")
    return tmp_path


def test_names_uids_and_groups_resolve_like_docker_user(etc: Path) -> None:
    assert resolve_user("agent", "[agent] user") == users.SandboxUser(1500, 1501, "agent")
    assert resolve_user(1600, "[verifier] user") == users.SandboxUser(1600, 1600, "checker")
    assert resolve_user("agent:staff", "[agent] user") == users.SandboxUser(1500, 50, "agent")
    assert resolve_user("4242:7", "[agent] user") == users.SandboxUser(4242, 7, None)
    assert resolve_user("4242", "[agent] user") == users.SandboxUser(4242, 4242, None)  # not in passwd


def test_unknown_users_and_groups_are_one_line(etc: Path) -> None:
    with pytest.raises(UserError, match=r"^\[agent\] user = 'ghost': no such user in the sandbox \(.*passwd\)$"):
        resolve_user("ghost", "[agent] user")
    with pytest.raises(UserError, match=r"^\[verifier\] user = 'agent:nope': no such group in the sandbox"):
        resolve_user("agent:nope", "[verifier] user")


def test_agent_user_needs_the_uid_jail_and_is_never_root(etc: Path) -> None:
    with pytest.raises(JailError, match=r"\[agent\] user = 'agent': needs the 'uid' agent jail .* not 'userns'"):
        honour_agent_user(Jail(kind="userns"), "agent")
    with pytest.raises(UserError, match=r"\[agent\] user = 'root' is uid 0: the agent never runs as root"):
        honour_agent_user(Jail(kind="uid", agent_uid=1000), "root")
    jail = Jail(kind="uid", agent_uid=1000)
    honour_agent_user(jail, "agent")
    assert (jail.user, jail.group) == (1500, 1501)
    assert Jail(kind="uid", agent_uid=1000).group == 1000


def test_verifier_user_that_is_ours_needs_no_switch(etc: Path) -> None:
    me = f"{os.geteuid()}:{os.getegid()}"
    assert verifier_identity(None) is None and verifier_identity(me) is None
    if os.geteuid() != 0:
        with pytest.raises(UserError, match="cannot switch to uid 1600"):
            verifier_identity("checker")


def test_cli_takes_both_users(tmp_path: Path) -> None:
    opts = parse_options(["--task-dir", str(tmp_path), "--harness", "oracle", "--agent-jail", "uid", "--agent-uid", "1000",
                          "--agent-user", "agent", "--verifier-user", "1600"])
    assert (opts.agent_user, opts.verifier_user) == ("agent", "1600")


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A task and sandbox under a dir other uids can traverse (pytest's tmp_path is 0700)."""
    root = Path(tempfile.mkdtemp(prefix="openforge-users-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _reachable_by_any_uid(path: str) -> bool:
    """Every ancestor of ``path`` lets other uids through (as the docker image's last layer
    makes sure for the mounted runtime); a runtime under a 0700 /root is not."""
    p = Path(path).resolve()
    return all(a.stat().st_mode & 0o001 for a in [p, *p.parents] if a != Path("/"))


@pytest.mark.skipif(os.geteuid() != 0 or not _has_cap(7), reason="switching users needs root with CAP_SETUID")
def test_harness_and_verifier_run_as_the_task_users(open_root: Path) -> None:
    import sys

    if not all(_reachable_by_any_uid(p) for p in (sys.executable, sys.base_prefix, sys.prefix)):
        print(f"SKIP reason: this interpreter ({sys.executable}) is not reachable by other uids")
        pytest.skip(f"{sys.executable} or its prefix is not reachable by other uids (the uid jail runs Python as them)")
    # Bare uids nobody on this machine uses (the uid jail sweeps every process of the agent uid).
    agent, checker = 54321, 54322
    task = open_root / "task"
    for rel, text in {
        "task.toml": f'[task]\nname = "acme/users"\n[agent]\nuser = "{agent}"\n[verifier]\nuser = "{checker}:{checker}"\n',
        "instruction.md": "Write who you are.\n",
        "environment/Dockerfile": "FROM debian:bookworm-slim\n",
        "solution/solve.sh": 'echo "$(id -u):$(id -g)" > "$WORKSPACE/who.txt"\n',
    }.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    tests, ws = open_root / "tests", open_root / "ws"
    tests.mkdir()
    ws.mkdir(mode=0o777)
    ws.chmod(0o777)
    (tests / "test.sh").write_text(
        f'[ "$(cat "$WORKSPACE/who.txt")" = "{agent}:{agent}" ] && [ "$(id -u):$(id -g)" = "{checker}:{checker}" ]'
        ' && r=1 || r=0\necho "$(id -u) $(cat "$WORKSPACE/who.txt")" > "$LOGS_DIR/verifier/seen.txt"\n'
        'echo $r > "$LOGS_DIR/verifier/reward.txt"\n')
    opts = RunnerOptions(task_dir=task, harness="oracle", workspace=ws, logs_dir=open_root / "logs", tests_dir=tests,
                         solution_dir=task / "solution", agent_jail="uid", agent_uid=1000, agent_user=str(agent),
                         verifier_user=f"{checker}:{checker}")
    report = asyncio.run(run_rollout(opts, emit=lambda _line: None))
    seen = (open_root / "logs" / "verifier" / "seen.txt").read_text().strip() if \
        (open_root / "logs" / "verifier" / "seen.txt").is_file() else ""
    assert (report.status.value, report.reward) == ("ok", 1.0), (report, seen)
    assert (open_root / "logs" / "verifier").stat().st_uid == checker
