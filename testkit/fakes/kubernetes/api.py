"""The HTTP face of the fake API server (aiohttp): REST paths, verbs, query parameters,
watch streams and the ``pods/log`` subresource, mapped onto the Store and the kubelet."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import orjson
from aiohttp import web

from testkit.fakes.kubernetes.kubelet import SimulatedKubelet
from testkit.fakes.kubernetes.resources import (
    BY_PATH,
    SERVER_VERSION,
    Resource,
    api_group,
    api_group_list,
    api_versions,
    resource_list,
)
from testkit.fakes.kubernetes.status import ApiError
from testkit.fakes.kubernetes.store import PODS, Store

log = logging.getLogger(__name__)

DEFAULT_WATCH_TIMEOUT = 1800.0


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _error(exc: ApiError) -> web.Response:
    return _json(exc.body, exc.code)


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def _int(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ApiError.bad_request(f"invalid value for {name}: {value!r}") from None


class Route:
    """A parsed REST path: resource, namespace, name, subresource."""

    def __init__(self, res: Resource, namespace: str | None, name: str | None, sub: str | None) -> None:
        self.res, self.namespace, self.name, self.sub = res, namespace, name, sub


def parse_path(group: str, version: str, segs: list[str]) -> Route | None:
    def lookup(plural: str) -> Resource | None:
        return BY_PATH.get((group, version, plural))

    if len(segs) >= 3 and segs[0] == "namespaces":
        res = lookup(segs[2])
        if res is not None and res.namespaced:
            rest = segs[3:]
            if len(rest) > 2:
                return None
            return Route(res, segs[1], rest[0] if rest else None, rest[1] if len(rest) > 1 else None)
    if not segs or len(segs) > 3:
        return None
    res = lookup(segs[0])
    if res is None:
        return None
    if res.namespaced:
        # /api/v1/pods: list/watch across namespaces only
        return Route(res, None, None, None) if len(segs) == 1 else None
    return Route(res, "", segs[1] if len(segs) > 1 else None, segs[2] if len(segs) > 2 else None)


class KubeHTTP:
    def __init__(self, store: Store, kubelet: SimulatedKubelet | None, token: str | None = None,
                 bookmark_seconds: float = 60.0) -> None:
        self.store = store
        self.kubelet = kubelet
        self.token = token
        self.bookmark_seconds = bookmark_seconds
        self.requests = 0
        self.app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._middleware])
        r = self.app.router
        for slash in ("", "/"):  # the clients ask for /version/, /apis/, /api/v1/ ...
            r.add_get("/version" + slash, lambda _req: _json(SERVER_VERSION))
            r.add_get("/api" + slash, lambda _req: _json(api_versions()))
            r.add_get("/apis" + slash, lambda _req: _json(api_group_list()))
            r.add_route("*", "/api/{version}" + slash, self._discovery)
            r.add_route("*", "/apis/{group}" + slash, self._discovery)
        for probe in ("/healthz", "/livez", "/readyz"):
            r.add_get(probe, lambda _req: web.Response(text="ok"))
        r.add_route("*", "/apis/{group}/{version}", self._discovery)
        # Test-only control routes (what FakeKubeProcess calls; no real server has them).
        r.add_post("/_fake/inject", self._fake_inject)
        r.add_post("/_fake/clear-injections", self._fake_clear)
        r.add_post("/_fake/lose-node", self._fake_lose_node)
        r.add_get("/_fake/pods", self._fake_pods)
        r.add_get("/_fake/stats", self._fake_stats)
        r.add_route("*", "/api/{version}/{tail:.+}", self._core)
        r.add_route("*", "/apis/{group}/{version}/{tail:.+}", self._core)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests += 1
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        if (self.token is not None and request.path not in ("/healthz", "/livez", "/readyz", "/version")
                and (scheme.lower() != "bearer" or credential.strip() != self.token)):
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": "Unauthorized", "reason": "Unauthorized", "code": 401}, 401)
        try:
            return await handler(request)
        except ApiError as exc:
            return _error(exc)
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception("fake kube API: internal error on %s %s", request.method, request.path)
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": f"fake API server error: {type(exc).__name__}: {exc}",
                          "reason": "InternalError", "code": 500}, 500)

    # ---- test control --------------------------------------------------------------------
    def _need_kubelet(self) -> SimulatedKubelet:
        if self.kubelet is None:
            raise ApiError(404, "NotFound", "this fake has no kubelet")
        return self.kubelet

    async def _fake_inject(self, request: web.Request) -> web.Response:
        body = await self._body(request) or {}
        try:
            self._need_kubelet().inject(body.get("selector", ""), body.get("failure", ""), body.get("count"))
        except ValueError as exc:
            raise ApiError.bad_request(str(exc)) from None
        return _json({"ok": True})

    async def _fake_clear(self, _request: web.Request) -> web.Response:
        self._need_kubelet().clear_injections()
        return _json({"ok": True})

    async def _fake_lose_node(self, request: web.Request) -> web.Response:
        body = await self._body(request) or {}
        try:
            self._need_kubelet().lose_node(body.get("name", ""))
        except ValueError as exc:
            raise ApiError.bad_request(str(exc)) from None
        return _json({"ok": True})

    async def _fake_pods(self, request: web.Request) -> web.Response:
        return _json(list(self.store.iter(PODS, request.query.get("namespace"))))

    async def _fake_stats(self, _request: web.Request) -> web.Response:
        return _json(self.stats())

    def stats(self) -> dict[str, Any]:
        import resource

        pending = len(self.kubelet.pending) if self.kubelet else 0
        return {"requests": self.requests, "writes": self.store.writes, "resource_version": self.store.rv,
                "pods": len(self.store.iter(PODS, None)), "pending": pending,
                "watchers": sum(len(w) for w in self.store.watchers.values()),
                "server_thread_cpu_s": time.thread_time(),
                "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}

    async def _discovery(self, request: web.Request) -> web.Response:
        group = request.match_info.get("group", "")
        version = request.match_info.get("version")
        if version is None:
            body = api_group(group)
        else:
            body = resource_list(group, version)
        if body is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return _json(body)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError.bad_request("the request body is not valid JSON") from None

    async def _core(self, request: web.Request) -> web.StreamResponse:
        group = request.match_info.get("group", "")
        version = request.match_info["version"]
        segs = [s for s in request.match_info["tail"].split("/") if s]
        if not segs and group:
            return await self._discovery(request)
        route = parse_path(group, version, segs)
        if route is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        q = request.query
        method = request.method
        res, ns = route.res, route.namespace
        dry_run = q.get("dryRun") == "All"
        if route.name is None:  # collection
            if method == "GET":
                if _flag(q.get("watch")):
                    return await self._watch(request, route)
                items, token, remaining = self.store.list(res, ns, q.get("labelSelector"), q.get("fieldSelector"),
                                                          _int(q.get("limit"), "limit"), q.get("continue"))
                meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
                if token:
                    meta["continue"] = token
                    meta["remainingItemCount"] = remaining
                return _json({"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                              "items": items})
            if method == "POST":
                if ns is None:
                    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                                   "requested resource")
                obj = self.store.create(res, ns, await self._body(request), dry_run=dry_run)
                return _json(obj, 201)
            if method == "DELETE":
                if ns is None:
                    raise ApiError(405, "MethodNotAllowed", "deletecollection needs a namespace")
                opts = await self._body(request) or {}
                grace = _int(q.get("gracePeriodSeconds"), "gracePeriodSeconds")
                items = self.store.delete_collection(
                    res, ns, q.get("labelSelector"), q.get("fieldSelector"),
                    grace=grace if grace is not None else opts.get("gracePeriodSeconds"),
                    propagation=q.get("propagationPolicy") or opts.get("propagationPolicy"))
                return _json({"kind": f"{res.kind}List", "apiVersion": res.api_version,
                              "metadata": {"resourceVersion": str(self.store.rv)},
                              "items": [i for i in items if i.get("kind") == res.kind]})
            raise ApiError(405, "MethodNotAllowed", f"method {method} is not allowed on a collection")
        name = route.name
        ns = ns or ""
        if route.sub == "log" and res is PODS and method == "GET":
            return await self._log(request, ns, name)
        if route.sub == "eviction" and res is PODS and method == "POST":
            body = await self._body(request) or {}
            opts = body.get("deleteOptions") or {}
            self.store.delete(res, ns, name, grace=opts.get("gracePeriodSeconds"))
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
                         201)
        if route.sub not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET":
            return _json(self.store.get(res, ns, name))
        if method == "PUT":
            return _json(self.store.replace(res, ns, name, await self._body(request), subresource=route.sub,
                                            dry_run=dry_run))
        if method == "PATCH":
            return _json(self.store.patch(res, ns, name, request.headers.get("Content-Type", ""),
                                          await self._body(request), subresource=route.sub, dry_run=dry_run))
        if method == "DELETE" and route.sub is None:
            opts = await self._body(request) or {}
            grace = _int(q.get("gracePeriodSeconds"), "gracePeriodSeconds")
            out = self.store.delete(res, ns, name, grace=grace if grace is not None else opts.get("gracePeriodSeconds"),
                                    propagation=q.get("propagationPolicy") or opts.get("propagationPolicy"),
                                    preconditions=opts.get("preconditions"), dry_run=dry_run)
            return _json(out)
        raise ApiError(405, "MethodNotAllowed", f"method {method} is not allowed here")

    # ---- watch ---------------------------------------------------------------------------
    async def _watch(self, request: web.Request, route: Route) -> web.StreamResponse:
        q = request.query
        timeout = float(_int(q.get("timeoutSeconds"), "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        bookmarks = _flag(q.get("allowWatchBookmarks"))
        resp = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
        resp.enable_chunked_encoding()
        try:
            watcher = self.store.watch(route.res, route.namespace, q.get("labelSelector"), q.get("fieldSelector"),
                                       q.get("resourceVersion"))
        except ApiError as exc:
            if exc.code != 410:
                raise
            # As the watch cache does: 200, then one ERROR event carrying the 410 Status.
            await resp.prepare(request)
            await resp.write(orjson.dumps({"type": "ERROR", "object": exc.body}) + b"\n")
            await resp.write_eof()
            return resp
        await resp.prepare(request)
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.bookmark_seconds
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = deadline - now
                if bookmarks:
                    wait = min(wait, max(0.0, next_bookmark - now))
                try:
                    first = await asyncio.wait_for(watcher.queue.get(), timeout=wait)
                except TimeoutError:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        next_bookmark = time.monotonic() + self.bookmark_seconds
                        await resp.write(orjson.dumps({"type": "BOOKMARK", "object": {
                            "kind": route.res.kind, "apiVersion": route.res.api_version,
                            "metadata": {"resourceVersion": str(self.store.rv)}}}) + b"\n")
                    continue
                chunk = [first]
                while not watcher.queue.empty() and len(chunk) < 512:
                    chunk.append(watcher.queue.get_nowait())
                await resp.write(b"".join(chunk))
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unwatch(watcher)
        return resp

    # ---- logs ----------------------------------------------------------------------------
    async def _log(self, request: web.Request, ns: str, name: str) -> web.StreamResponse:
        q = request.query
        pod = self.store.get(PODS, ns, name)
        containers = [c["name"] for c in pod["spec"]["containers"]]
        inits = [c["name"] for c in pod["spec"].get("initContainers") or []]
        container = q.get("container")
        if container is None:
            if len(containers) > 1:
                raise ApiError.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                           f"[{' '.join(containers)}]")
            container = containers[0]
        elif container not in containers and container not in inits:
            raise ApiError.bad_request(f"container {container} is not valid for pod {name}")
        statuses = {cs["name"]: cs for cs in [*(pod["status"].get("initContainerStatuses") or []),
                                               *(pod["status"].get("containerStatuses") or [])]}
        state = (statuses.get(container) or {}).get("state") or {}
        if not state or "waiting" in state:
            why = (state.get("waiting") or {}).get("reason", "ContainerCreating")
            if why in ("ErrImagePull", "ImagePullBackOff"):
                why = "trying and failing to pull image"
            raise ApiError.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {why}')
        if _flag(q.get("previous")):
            raise ApiError.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        plog = self.kubelet.pod_log(ns, name) if self.kubelet and container not in inits else None
        if plog is None:
            return web.Response(text="", content_type="text/plain")
        stamps = _flag(q.get("timestamps"))
        tail = _int(q.get("tailLines"), "tailLines")
        limit = _int(q.get("limitBytes"), "limitBytes")

        def render(lines: list[tuple[str, str]]) -> bytes:
            return "".join(f"{ts} {text}\n" if stamps else f"{text}\n" for ts, text in lines).encode()

        lines = plog.lines[-tail:] if tail is not None and tail >= 0 else plog.lines
        if tail == 0:
            lines = []
        if not _flag(q.get("follow")):
            data = render(lines)
            return web.Response(body=data[:limit] if limit else data, content_type="text/plain")
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        sent_bytes, pos = 0, len(plog.lines)
        try:
            data = render(lines)
            while True:
                if data:
                    if limit is not None:
                        data = data[: max(0, limit - sent_bytes)]
                    await resp.write(data)
                    sent_bytes += len(data)
                    if limit is not None and sent_bytes >= limit:
                        break
                if plog.closed and pos >= len(plog.lines):
                    break
                waiter = plog.changed
                if pos >= len(plog.lines) and not plog.closed:
                    await waiter.wait()
                data = render(plog.lines[pos:])
                pos = len(plog.lines)
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return resp
