"""A protocol-faithful fake Kubernetes API server on loopback (external-boundary fake).

The official ``kubernetes`` and ``kubernetes_asyncio`` clients talk to it over HTTP through a
kubeconfig, exactly as to a real cluster. It serves core/v1 pods (+ ``status``, ``log``,
``eviction``), namespaces, nodes, secrets, configmaps, events, serviceaccounts, services,
networking.k8s.io/v1 networkpolicies and rbac roles/rolebindings: create, get, list
(``labelSelector``, ``fieldSelector``, ``limit``/``continue``), replace, patch (merge, JSON,
strategic), delete (grace periods, ``propagationPolicy``, preconditions) and
deletecollection; watches (``?watch=true``: chunked JSON lines ADDED/MODIFIED/DELETED,
resourceVersion resume, an ERROR event with a 410 Status when the version is older than the
kept history, ``timeoutSeconds``, BOOKMARKs); Status objects for errors (404 NotFound, 409
AlreadyExists/Conflict, 422 Invalid with causes, 400, 403); ownerReference garbage
collection; ``/version``, ``/api``, ``/apis`` discovery. A simulated scheduler + kubelet
(kubelet.py) runs every pod through an executor and drives its phase, conditions,
containerStatuses and events.

Use::

    from testkit.fakes.kubernetes import FakeKubeAPI, SimulatedKubelet, ExecResult, Node

    with FakeKubeAPI() as api:                          # default kubelet: every pod exits 0 at once
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        kubernetes.config.load_kube_config(str(kubeconfig))
        ...                                             # real client calls
        api.inject("app=bad", "oom")                    # oom|deadline|image_pull|evicted|unschedulable|node_lost
        api.pods()                                      # snapshot of every stored pod (all namespaces)

    async def run(pod, log):                            # your own executor
        log("hello"); return ExecResult(exit_code=0)
    api = FakeKubeAPI(kubelet=SimulatedKubelet(executor=run, nodes=[Node("n1", cpu="8", memory="16Gi")]))

``inject(selector, failure, count=None)`` applies to matching pods not yet finished and to
future ones (the first ``count`` only when given); ``clear_injections()`` stops it. The
server runs in its own thread and event loop, so sync and async tests can both use it;
``call(fn)`` runs ``fn(store, kubelet)`` on that loop and returns its result.
``FakeKubeAPI(tls=True)`` serves HTTPS with a throwaway self-signed certificate: the kubeconfig
carries it as ``certificate-authority-data``, and ``write_incluster_files(dir)`` writes the
service-account ``token``/``ca.crt`` an in-cluster config loader reads.

Benchmarks that must not share their GIL with the fake use ``FakeKubeProcess`` (process.py):
the same interface, the server in a child process (``python -m testkit.fakes.kubernetes``).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TypeVar

import orjson
from aiohttp import web

from testkit.fakes.kubernetes.api import KubeHTTP
from testkit.fakes.kubernetes.kubelet import SimulatedKubelet
from testkit.fakes.kubernetes.store import PODS, Store, clone
from testkit.fakes.kubernetes.tls import ServerCert, self_signed

T = TypeVar("T")


def kubeconfig_text(url: str, token: str | None, namespace: str = "default", ca_pem: bytes | None = None) -> str:
    cluster: dict[str, Any] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "fake",
              "clusters": [{"name": "fake", "cluster": cluster}],
              "users": [{"name": "fake", "user": {"token": token or "fake-token"}}],
              "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": namespace}}]}
    return orjson.dumps(config, option=orjson.OPT_INDENT_2).decode()


class FakeKubeAPI:
    def __init__(self, kubelet: SimulatedKubelet | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, history: int = 20_000, bookmark_seconds: float = 60.0,
                 tls: bool = False) -> None:
        self.kubelet = kubelet if kubelet is not None else SimulatedKubelet()
        self.cert: ServerCert | None = self_signed(host) if tls else None
        self.host, self.port = host, port
        self.token = token
        self.history = history
        self.bookmark_seconds = bookmark_seconds
        self.store: Store | None = None
        self.http: KubeHTTP | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"{'https' if self.cert else 'http'}://{self.host}:{self.port}"

    def start(self) -> Self:
        if self._thread is not None:
            return self
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop = asyncio.new_event_loop()

        def main() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._serve())
            except BaseException as exc:  # noqa: BLE001 - surfaced to start()
                ready.set_exception(exc)
                return
            ready.set_result(None)
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, name="fake-kube-api", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    async def _serve(self) -> None:
        self.store = Store(history=self.history)
        self.kubelet.attach(self.store)
        self.http = KubeHTTP(self.store, self.kubelet, self.token, self.bookmark_seconds)
        self._runner = web.AppRunner(self.http.app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        ssl_context = None
        if self.cert is not None:
            with tempfile.TemporaryDirectory(prefix="fake-kube-tls-") as tmp:
                ssl_context = self.cert.ssl_context(Path(tmp))
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024, ssl_context=ssl_context)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return

        async def shutdown() -> None:
            await self.kubelet.shutdown()
            if self._runner is not None:
                await self._runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()
            self._thread = None
            self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- helpers for tests -------------------------------------------------------------
    def call(self, fn: Callable[[Store, SimulatedKubelet], T]) -> T:
        """Run ``fn(store, kubelet)`` on the server's loop (thread-safe) and return its result."""
        if self._loop is None or self.store is None:
            raise RuntimeError("FakeKubeAPI is not started")
        store = self.store

        async def run() -> T:
            return fn(store, self.kubelet)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """A kubeconfig (JSON is valid YAML) pointing at this server; returns its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kubeconfig_text(self.url, self.token, namespace, self.cert.cert_pem if self.cert else None))
        return path

    def write_incluster_files(self, directory: str | Path) -> dict[str, str]:
        """What a pod's service account gives the in-cluster config loader: ``token`` and
        ``ca.crt`` files under ``directory`` (TLS mode only). Returns the environment
        (KUBERNETES_SERVICE_HOST/PORT) plus ``token_file``/``ca_file`` paths to point the
        loader at (``InClusterConfigLoader(token_filename=..., cert_filename=..., environ=...)``)."""
        if self.cert is None:
            raise RuntimeError("in-cluster config needs HTTPS: start FakeKubeAPI(tls=True)")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "token").write_text(self.token or "fake-token")
        (directory / "ca.crt").write_bytes(self.cert.cert_pem)
        return {"KUBERNETES_SERVICE_HOST": self.host, "KUBERNETES_SERVICE_PORT": str(self.port),
                "token_file": str(directory / "token"), "ca_file": str(directory / "ca.crt")}

    def inject(self, label_selector: str, failure: str, count: int | None = None) -> None:
        """Make pods matching ``label_selector`` fail as ``failure`` (see kubelet.FAILURES)."""
        self.call(lambda _s, k: k.inject(label_selector, failure, count))

    def clear_injections(self) -> None:
        self.call(lambda _s, k: k.clear_injections())

    def lose_node(self, name: str) -> None:
        self.call(lambda _s, k: k.lose_node(name))

    def pods(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the stored pods (every namespace unless one is named)."""
        return self.call(lambda s, _k: clone(list(s.iter(PODS, namespace))))

    def stats(self) -> dict[str, Any]:
        """Requests, writes, live pods, watchers and the server thread's CPU seconds."""
        return self.call(lambda _s, _k: self.http.stats() if self.http else {})
