"""Entry point of a rollout pod's sandbox container (stdlib only; run by path from the runtime).

1. make itself non-dumpable (other processes of the same uid — the agent — cannot read
   its environment, where the pod key is, or its file descriptors);
2. long-poll the control endpoint for its assignment (``OPENFORGE_CONTROL_URL``, pod key
   from the pod's Secret); a warm-pool pod waits here until a rollout claims it;
3. unpack the task's visible files into ``/task`` (and the solution into ``/solution`` for
   the oracle), then run the runner (``python -m environments.runner ...``) without the
   pod key in its environment, forwarding its stdout line by line to the container log;
4. on ``OPENFORGE_PHASE agent_done`` fetch the tests (``POST /v1/agent-done``) and unpack
   them into ``/tests``, ``test.sh`` last and atomically (the runner starts the verifier
   when it appears);
5. send a tar of ``/logs`` back (``POST /v1/logs``) and exit with the runner's status.
SIGTERM (pod deletion, activeDeadlineSeconds) is passed on to the runner, which stops its
children and reports ``infra_error/cancelled``.
"""

from __future__ import annotations

import base64
import ctypes
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request

PHASE_AGENT_DONE = "OPENFORGE_PHASE agent_done"
EXIT_NO_ASSIGNMENT = 3


def _say(msg: str) -> None:
    sys.stderr.write(f"pod_entry: {msg}\n")
    sys.stderr.flush()


def _request(url: str, key: str, *, data: bytes | None = None, timeout: float = 60.0,
             content_type: str = "application/octet-stream") -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                 headers={"authorization": f"Bearer {key}", "content-type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _retrying(fn, what: str, attempts: int = 30):  # type: ignore[no-untyped-def]
    delay = 0.2
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except (urllib.error.URLError, OSError) as exc:
            if attempt == attempts:
                raise
            _say(f"{what}: {exc} (retrying)")
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    return None


def _untar(data: bytes, dest: str, *, last: str | None = None) -> None:
    """Unpack ``data`` into ``dest``; the member named ``last`` is written last, atomically."""
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = tar.getmembers()
        held = [m for m in members if last is not None and m.name == last]
        rest = [m for m in members if m not in held]
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=rest, **kwargs)
        for m in held:
            src = tar.extractfile(m)
            if src is None:
                continue
            tmp = os.path.join(dest, f".{m.name}.partial")
            with open(tmp, "wb") as out:
                out.write(src.read())
            os.chmod(tmp, 0o755)
            os.replace(tmp, os.path.join(dest, m.name))


def _logs_tar(root: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if os.path.isdir(root):
            for name in sorted(os.listdir(root)):
                tar.add(os.path.join(root, name), arcname=name)
    return buf.getvalue()


def main() -> int:
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass
    control = os.environ.get("OPENFORGE_CONTROL_URL", "").rstrip("/")
    key = os.environ.pop("OPENFORGE_POD_KEY", "")
    if not control or not key:
        _say("OPENFORGE_CONTROL_URL and OPENFORGE_POD_KEY must be set")
        return EXIT_NO_ASSIGNMENT
    # -- 2. assignment ---------------------------------------------------------------------
    while True:
        status, body = _retrying(lambda: _request(f"{control}/v1/assignment?wait=25", key, timeout=40), "assignment")
        if status == 200:
            break
        if status == 204:
            continue
        _say(f"no assignment (HTTP {status}): {body[:200].decode(errors='replace')}")
        return EXIT_NO_ASSIGNMENT
    a = json.loads(body)
    _untar(base64.b64decode(a["task_tar"]), a["task_dir"])
    if a.get("solution_tar"):
        _untar(base64.b64decode(a["solution_tar"]), a["solution_dir"])
    for d in (a["tests_dir"], os.path.join(a["logs_dir"], "agent"), os.path.join(a["logs_dir"], "verifier"),
              os.environ.get("HOME", "/tmp/home")):
        os.makedirs(d, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENFORGE_POD_KEY", "OPENFORGE_CONTROL_URL")}
    env.update(a.get("env") or {})
    argv = [sys.executable, *a["argv"][1:]]
    # -- 3. runner -------------------------------------------------------------------------
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                            cwd=a["workdir"], start_new_session=False)

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.decode("utf-8", errors="replace")
        if line.strip() == PHASE_AGENT_DONE:
            try:
                status, tests = _retrying(lambda: _request(f"{control}/v1/agent-done", key, data=b"", timeout=120),
                                          "agent-done", attempts=10)
                if status == 200:
                    _untar(tests, a["tests_dir"], last="test.sh")
                else:
                    _say(f"tests not delivered (HTTP {status}): {tests[:200].decode(errors='replace')}")
            except (OSError, tarfile.TarError) as exc:
                _say(f"tests not delivered: {exc}")
        sys.stdout.write(line)
        sys.stdout.flush()
    code = proc.wait()
    # -- 5. logs ---------------------------------------------------------------------------
    try:
        _request(f"{control}/v1/logs", key, data=_logs_tar(a["logs_dir"]), timeout=60,
                 content_type="application/x-tar")
    except (OSError, tarfile.TarError) as exc:
        _say(f"logs not sent: {exc}")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
