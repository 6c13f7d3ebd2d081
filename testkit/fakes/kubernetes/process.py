"""``FakeKubeProcess``: the fake API server in a child process, with FakeKubeAPI's test
interface (url, write_kubeconfig, inject, clear_injections, lose_node, pods, stats) over its
``/_fake/*`` control routes. Use it where the fake must not share the caller's GIL
(benchmarks); executors must then be importable (``executor="pkg.mod:fn"``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import httpx

REPO = Path(__file__).resolve().parents[3]


class FakeKubeProcess:
    def __init__(self, *, nodes: list[dict[str, Any]] | None = None, executor: str | None = None,
                 token: str | None = None, events: bool = True, kubelet_options: dict[str, Any] | None = None,
                 python: str = sys.executable) -> None:
        self.nodes, self.executor, self.token, self.events = nodes, executor, token, events
        self.kubelet_options = kubelet_options or {}
        self.python = python
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self) -> Self:
        self._tmp = tempfile.TemporaryDirectory(prefix="fake-kube-")
        ready = Path(self._tmp.name) / "ready.json"
        cmd = [self.python, "-m", "testkit.fakes.kubernetes", "--ready-file", str(ready),
               "--kubelet-options", json.dumps(self.kubelet_options)]
        if self.nodes is not None:
            cmd += ["--nodes", json.dumps(self.nodes)]
        if self.executor:
            cmd += ["--executor", self.executor]
        if self.token:
            cmd += ["--token", self.token]
        if not self.events:
            cmd.append("--no-events")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env)
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"fake kube API process exited with {self.proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("fake kube API process was not ready within 60 s")
            time.sleep(0.05)
        self.url = json.loads(ready.read_text())["url"]
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        resp = httpx.request(method, self.url + path, headers=headers, timeout=60, **kw)
        if resp.status_code >= 400:
            raise ValueError(resp.json().get("message", resp.text))
        return resp.json()

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        from testkit.fakes.kubernetes.server import kubeconfig_text

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kubeconfig_text(self.url, self.token, namespace))
        return path

    def inject(self, label_selector: str, failure: str, count: int | None = None) -> None:
        self._call("POST", "/_fake/inject", json={"selector": label_selector, "failure": failure, "count": count})

    def clear_injections(self) -> None:
        self._call("POST", "/_fake/clear-injections")

    def lose_node(self, name: str) -> None:
        self._call("POST", "/_fake/lose-node", json={"name": name})

    def pods(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return self._call("GET", "/_fake/pods", params={"namespace": namespace} if namespace else None)

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/_fake/stats")
