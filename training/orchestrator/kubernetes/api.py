"""A thin async client of the Kubernetes API on ``kubernetes_asyncio`` (the official async client).

Objects go in and come out as plain JSON dicts: the client's model classes are skipped
(``_preload_content=False``) because deserializing every watch event into ``V1Pod`` costs
more CPU than the rest of the orchestrator. Errors are :class:`KubeError` with the HTTP
status and the API's own message.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

log = logging.getLogger(__name__)

#: Token file of a pod's service account (its presence means "we run in a cluster"); the
#: cluster's CA certificate is ``ca.crt`` beside it.
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class WarningEvent(NamedTuple):
    """One Warning event of a pod, as ``kubectl describe`` shows it."""

    reason: str
    message: str
    count: int = 1

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}" + (f" (x{self.count})" if self.count > 1 else "")


class KubeError(RuntimeError):
    """The API server refused a call (``status`` 0: it could not be reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"kubernetes API {status}: {message}" if status else f"kubernetes API unreachable: {message}")
        self.status = status


async def _checked(resp: Any, what: str) -> dict[str, Any]:
    try:
        body = await resp.read()
    finally:
        resp.release()
    if not 200 <= resp.status <= 299:
        try:
            message = orjson.loads(body).get("message") or body.decode(errors="replace")
        except (ValueError, AttributeError):
            message = body.decode(errors="replace")
        raise KubeError(resp.status, f"{what}: {message[:500]}")
    return orjson.loads(body) if body else {}


_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _no_proxy_lookups(api_client: Any) -> None:
    """The client's aiohttp session trusts the environment, which costs a thread hop per
    request to look proxies up; with no proxy variable set the answer is always "none"."""
    session = getattr(api_client.rest_client, "pool_manager", None)
    if session is not None and hasattr(session, "_trust_env") and not any(os.environ.get(v) for v in _PROXY_VARS):
        session._trust_env = False


class KubeApi:
    """Namespaced calls the backend needs; create with :meth:`connect`."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        from kubernetes_asyncio import client

        self.api_client = api_client
        self.namespace = namespace
        self.core = client.CoreV1Api(api_client)
        self.net = client.NetworkingV1Api(api_client)

    @classmethod
    async def connect(cls, namespace: str, *, kubeconfig: str | None = None, context: str | None = None,
                      in_cluster: bool | None = None, pool_size: int = 256) -> KubeApi:
        """Load kubeconfig (or the in-cluster service account). Nothing is asked of the server
        yet (a namespaced service account may not read Namespace objects)."""
        from kubernetes_asyncio import client, config

        cfg = client.Configuration()
        use_cluster = in_cluster if in_cluster is not None else (
            SERVICE_ACCOUNT_TOKEN.exists() and "KUBERNETES_SERVICE_HOST" in os.environ and not kubeconfig)
        try:
            if use_cluster:
                config.load_incluster_config(client_configuration=cfg, token_filename=str(SERVICE_ACCOUNT_TOKEN),
                                             cert_filename=str(SERVICE_ACCOUNT_TOKEN.with_name("ca.crt")))
            else:
                await config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
        except Exception as exc:
            source = "in-cluster service account" if use_cluster else f"kubeconfig {kubeconfig or '(default)'}"
            raise KubeError(0, f"cannot load {source}: {exc}") from exc
        cfg.connection_pool_maxsize = pool_size
        api = cls(client.ApiClient(configuration=cfg), namespace)
        _no_proxy_lookups(api.api_client)
        return api

    async def close(self) -> None:
        await self.api_client.close()

    async def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        import aiohttp

        try:
            resp = await fn(*args, _preload_content=False, **kwargs)
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(0, f"{what}: {exc}") from exc
        return await _checked(resp, what)

    # -- objects ---------------------------------------------------------------------------
    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        kind = body["kind"]
        name = body["metadata"].get("name")
        fn = {"Pod": self.core.create_namespaced_pod, "Secret": self.core.create_namespaced_secret,
              "ConfigMap": self.core.create_namespaced_config_map,
              "NetworkPolicy": self.net.create_namespaced_network_policy}[kind]
        return await self._call(f"create {kind} {name}", fn, self.namespace, body)

    async def replace_network_policy(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        return await self._call(f"replace NetworkPolicy {name}", self.net.replace_namespaced_network_policy,
                                name, self.namespace, body)

    async def delete(self, kind: str, name: str, *, grace_seconds: int | None = None) -> bool:
        """Delete one object; False when it was already gone."""
        from kubernetes_asyncio import client

        fn = {"Pod": self.core.delete_namespaced_pod, "Secret": self.core.delete_namespaced_secret,
              "ConfigMap": self.core.delete_namespaced_config_map,
              "NetworkPolicy": self.net.delete_namespaced_network_policy}[kind]
        opts = client.V1DeleteOptions(grace_period_seconds=grace_seconds, propagation_policy="Background")
        try:
            await self._call(f"delete {kind} {name}", fn, name, self.namespace, body=opts)
            return True
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise

    async def list(self, kind: str, label_selector: str) -> tuple[list[dict[str, Any]], str]:
        """Items and the list's resourceVersion (where a watch goes on from)."""
        fn = {"Pod": self.core.list_namespaced_pod, "Secret": self.core.list_namespaced_secret,
              "ConfigMap": self.core.list_namespaced_config_map,
              "NetworkPolicy": self.net.list_namespaced_network_policy}[kind]
        out = await self._call(f"list {kind} {label_selector}", fn, self.namespace, label_selector=label_selector)
        return list(out.get("items") or []), str((out.get("metadata") or {}).get("resourceVersion") or "")

    async def patch_pod(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self._call(f"patch Pod {name}", self.core.patch_namespaced_pod, name, self.namespace, patch)

    async def pod_logs(self, name: str, container: str) -> str:
        import aiohttp

        try:
            resp = await self.core.read_namespaced_pod_log(name, self.namespace, container=container,
                                                           _preload_content=False)
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(0, f"logs of {name}: {exc}") from exc
        try:
            body = await resp.read()
        finally:
            resp.release()
        if not 200 <= resp.status <= 299:
            raise KubeError(resp.status, f"logs of {name}: {body.decode(errors='replace')[:300]}")
        return body.decode("utf-8", errors="replace")

    async def warning_events(self, pod_name: str, *, limit: int = 3) -> list[WarningEvent]:
        """The pod's latest distinct ``Warning`` events (newest last): why a pod never ran
        (FailedScheduling, FailedMount, Failed pulls) in the words of the scheduler and
        kubelet. Raises :class:`KubeError` (e.g. 403 without RBAC on events)."""
        out = await self._call(f"events of {pod_name}", self.core.list_namespaced_event, self.namespace,
                               field_selector=f"involvedObject.name={pod_name},type=Warning")

        def when(ev: dict[str, Any]) -> str:
            series = ev.get("series") or {}
            return str(series.get("lastObservedTime") or ev.get("lastTimestamp") or ev.get("eventTime")
                       or (ev.get("metadata") or {}).get("creationTimestamp") or "")

        found: list[WarningEvent] = []
        for ev in sorted(out.get("items") or [], key=when):
            event = WarningEvent(ev.get("reason") or "?", str(ev.get("message") or "").strip()[:200],
                                 int(ev.get("count") or (ev.get("series") or {}).get("count") or 1))
            if event in found:
                found.remove(event)
            found.append(event)
        return found[-limit:]

    async def watch_pods(self, label_selector: str, resource_version: str,
                         timeout_seconds: int = 300) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """``(type, pod)`` events from ``resource_version`` on; ends when the server closes the
        stream. A ``410 Gone`` (history compacted) is raised as ``KubeError(410)``."""
        import aiohttp

        try:
            resp = await self.core.list_namespaced_pod(
                self.namespace, label_selector=label_selector, watch=True, resource_version=resource_version,
                timeout_seconds=timeout_seconds, allow_watch_bookmarks=True, _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_seconds + 30))
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(0, f"watch pods: {exc}") from exc
        try:
            if not 200 <= resp.status <= 299:
                body = await resp.read()
                raise KubeError(resp.status, f"watch pods: {body.decode(errors='replace')[:300]}")
            async for raw in resp.content:
                line = raw.strip()
                if not line:
                    continue
                event = orjson.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    raise KubeError(int(obj.get("code") or 500), f"watch pods: {obj.get('message')}")
                yield kind, obj
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise KubeError(0, f"watch pods: {exc}") from exc
        finally:
            resp.release()
