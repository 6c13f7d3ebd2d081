"""sandbox_init runs the runner's ``-m`` module in its own interpreter (no second start) when
the command is this interpreter with ``-P -m``; any other command is exec'd as before."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from training.orchestrator.runtime import SANDBOX_INIT
from training.orchestrator.sandbox_init import same_interpreter_module

PROBE = ("import json, sys\n"
         "print(json.dumps({'argv': sys.argv[1:], 'ctypes': 'ctypes' in sys.modules, 'name': __name__}))\n"
         "sys.exit(3)\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "of_probe_mod.py").write_text(PROBE)
    argv = [sys.executable, "-P", str(SANDBOX_INIT), "--listen", f"127.0.0.1:{_free_port()}",
            "--unix", str(tmp_path / "none.sock"), "--", *cmd]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})


def test_the_same_interpreters_module_runs_in_process_with_its_args_and_exit_code(tmp_path: Path) -> None:
    done = _run(tmp_path, [sys.executable, "-P", "-m", "of_probe_mod", "--a", "b"])
    assert done.returncode == 3, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"argv": ["--a", "b"], "ctypes": True, "name": "__main__"}  # ctypes: sandbox_init's own import


def test_another_command_is_execd(tmp_path: Path) -> None:
    done = _run(tmp_path, [sys.executable, "-m", "of_probe_mod", "x"])  # no -P: not this process's flags
    assert done.returncode == 3, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["argv"] == ["x"] and out["ctypes"] is False


def test_same_interpreter_module_needs_this_interpreter_and_its_flags() -> None:
    # under pytest sys.flags.safe_path is off: only a -P interpreter (sandbox_init's) qualifies
    assert same_interpreter_module([sys.executable, "-P", "-m", "environments.runner"]) == (
        "environments.runner" if sys.flags.safe_path else None)
    assert same_interpreter_module(["/usr/bin/other-python", "-P", "-m", "environments.runner"]) is None
    assert same_interpreter_module([sys.executable, "-m", "environments.runner"]) is None
    assert same_interpreter_module(["bash", "-c", "true"]) is None
