"""The proxy's own CPU per call on a trajectory workload, in one process, without HTTP (issue 18).

One rollout replays a workload of bench/proxy_load.py (``codex``, ``claude`` or ``chat``)
through the proxy app called as ASGI (the body handed over in 64 KB chunks, as a server
would) against an engine whose wire is skipped: the chat body is JSON-encoded as the HTTP
engine adapter encodes it, and the mock engine's answer (prepared before the clock starts)
is JSON-decoded as the adapter decodes it. So what is measured is everything the proxy does
with a call except the sockets: body parse, translation, budget, engine request encode and
answer decode, recording (SQLite, a temp DB), the answer to the caller. The last call (the
longest prompt) is then sent ``--end`` more times: CPU ms per call at the workload's end.
``--profile`` prints cProfile's top functions over those end calls.

    .venv/bin/python bench/proxy_profile.py --workload codex [--profile] [--end 20]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from proxy_load import engine_answer, workloads  # noqa: E402

from training.engines.openai_compat import OpenAICompatEngine  # noqa: E402
from training.proxy.app import create_app  # noqa: E402


class WirelessEngine(OpenAICompatEngine):
    """The HTTP engine adapter with the socket cut out: encode the request, decode a prepared answer."""

    def __init__(self, answers: dict[bytes, bytes], *, plain_parse: bool = False) -> None:
        super().__init__("http://engine.invalid/v1", model="bench-policy")
        self.answers = answers
        self.last_request = b""
        self.plain_parse = plain_parse

    async def _send(self, method: str, path: str, body: dict[str, Any] | None = None,
                    loads: Callable[[bytes], Any] = orjson.loads) -> Any:
        data = orjson.dumps(body)
        self.last_request = data
        return (orjson.loads if self.plain_parse else loads)(self.answers[_key(body)])


def _key(body: dict[str, Any] | None) -> bytes:
    """A cheap key of a chat body: its message count and last message (prepared answers)."""
    messages = (body or {}).get("messages") or []
    return orjson.dumps([len(messages), messages[-1] if messages else None])


async def asgi_call(app: Any, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    chunks = [body[i:i + 65536] for i in range(0, len(body), 65536)] or [b""]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if chunks:
            chunk = chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    hdrs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": hdrs,
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def prepare_answers(w: Any) -> dict[bytes, bytes]:
    """The mock engine's answer to each of the workload's calls, keyed by the chat body."""
    from proxy import chat_bodies

    out = {}
    for n, raw in enumerate(chat_bodies(w), start=1):
        body = orjson.loads(raw)
        out[_key(body)] = engine_answer(body, n)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    (w,) = [w for w in workloads(args.calls, args.final_tokens) if w.name == args.workload]
    engine = WirelessEngine(prepare_answers(w), plain_parse=args.plain_parse)
    workdir = Path(tempfile.mkdtemp(prefix="openforge-proxy-profile-"))
    app = create_app(engine, db_url=f"sqlite:///{workdir / 'calls.db'}", admin_key="bench",
                     blobs_dir=workdir / "blobs", max_calls_per_rollout=100_000,
                     linear_storage=not args.full_storage)
    if args.freeze:
        gc.freeze()  # as serve_foreground does (training/proxy/server.py)
    out: dict[str, Any] = {"workload": w.name, "calls": len(w.bodies), "final_body_kb": len(w.bodies[-1]) / 1024}
    async with app.router.lifespan_context(app):
        status, text = await asgi_call(app, "/admin/rollouts", orjson.dumps({"task_id": "profile"}),
                                       {"authorization": "Bearer bench"})
        assert status == 201, text
        paths = [f"/rollouts/{orjson.loads(text)['token']}/v1/{w.path}"]
        for i in range(1, args.rollouts):
            status, text = await asgi_call(app, "/admin/rollouts", orjson.dumps({"task_id": f"profile-{i}"}),
                                           {"authorization": "Bearer bench"})
            paths.append(f"/rollouts/{orjson.loads(text)['token']}/v1/{w.path}")

        async def replay(path: str, bodies: list[bytes]) -> None:
            for body in bodies:
                status, text = await asgi_call(app, path, body)
                assert status == 200, text[:300]

        gc_ms = [0.0]
        gc_t0 = [0.0]
        by_gen: dict[int, list[float]] = {0: [], 1: [], 2: []}

        def on_gc(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                gc_t0[0] = time.perf_counter()
            else:
                ms = (time.perf_counter() - gc_t0[0]) * 1000
                gc_ms[0] += ms
                by_gen[info["generation"]].append(ms)

        gc.callbacks.append(on_gc)
        c0 = time.process_time()
        await asyncio.gather(*(replay(p, w.bodies) for p in paths))
        n = len(paths) * len(w.bodies)
        out["cpu_ms_per_call_mean"] = (time.process_time() - c0) * 1000 / n
        out["gc_ms_per_call_mean"] = gc_ms[0] / n
        prof = cProfile.Profile() if args.profile else None
        gc_ms[0] = 0.0
        for v in by_gen.values():
            v.clear()
        if prof is not None:
            prof.enable()
        c0 = time.process_time()
        await asyncio.gather(*(replay(p, [w.bodies[-1]] * args.end) for p in paths))
        n = len(paths) * args.end
        out["end_cpu_ms"] = (time.process_time() - c0) * 1000 / n
        out["end_gc_ms"] = gc_ms[0] / n
        out["end_gc_by_generation"] = {g: (len(v), round(sum(v), 1)) for g, v in by_gen.items()}
        if prof is not None:
            prof.disable()
        gc.callbacks.remove(on_gc)
        out["engine_request_kb"] = len(engine.last_request) / 1024
        if prof is not None:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(args.sort).print_stats(args.top)
            out["profile"] = s.getvalue()
    return out


async def run_http(args: argparse.Namespace) -> dict[str, Any]:
    """The same over HTTP, as bench/proxy.py measures it: the mock engine and ``openforge proxy
    serve`` as processes (no engine delay), ``--rollouts`` rollouts replay the workload at once,
    then each sends the last call ``--end`` more times; the proxy's CPU (psutil) per call.
    With ``--profile`` the proxy runs under cProfile (its output written on exit)."""
    import proxy as bench

    (w,) = [w for w in workloads(args.calls, args.final_tokens) if w.name == args.workload]
    from proxy_load import without_delay

    w = without_delay(w)
    workdir = Path(tempfile.mkdtemp(prefix="openforge-proxy-profile-"))
    port = bench.free_port()
    engine = bench.spawn("mock-engine", [sys.executable, str(ROOT / "bench" / "proxy.py"), "--serve-mock", str(port),
                                         "--engine-delay", "0"], workdir)
    engine_url = f"http://127.0.0.1:{port}/v1"
    prof_out = workdir / "proxy.prof"
    out: dict[str, Any] = {"workload": w.name, "rollouts": args.rollouts}
    try:
        await bench.wait_http(f"{engine_url}/models", engine)
        pport = bench.free_port()
        cmd = [sys.executable, *(["-m", "cProfile", "-o", str(prof_out)] if args.profile else []), "-m", "cli", "proxy",
               "serve", "--engine", engine_url, "--port", str(pport), "--db", f"sqlite:///{workdir / 'calls.db'}",
               "--admin-key", "bench", "--max-calls", "100000000", *(["--full-storage"] if args.full_storage else [])]
        proc = bench.spawn("proxy", cmd, workdir, env={"PYTHONPATH": str(args.root.resolve())})
        url = f"http://127.0.0.1:{pport}"
        try:
            await bench.wait_http(f"{url}/healthz", proc)
            bases = await bench.register_rollouts(url, args.rollouts, "profile")
            run = await bench.replay(w, bases, proc.popen.pid)
            end = await bench.replay(w, bases, proc.popen.pid, [w.bodies[-1]] * args.end)
        finally:
            proc.stop()
        for name, r in (("run", run), ("end", end)):
            if r["errors"]:
                out[f"{name}_errors"] = r["errors"][:2]
            out[f"{name}_cpu_ms_per_call"] = r["cpu_s"] * 1000 / max(1, len(r["lat"]))
            out[f"{name}_rss_mb"] = r["rss_mb"]
        if args.profile and prof_out.exists():
            s = io.StringIO()
            pstats.Stats(str(prof_out), stream=s).sort_stats(args.sort).print_stats(args.top)
            out["profile"] = s.getvalue()
    finally:
        engine.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="codex", choices=["codex", "claude", "chat"])
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--final-tokens", type=int, default=60_000)
    p.add_argument("--end", type=int, default=3, help="times each rollout sends the last call again (CPU at the end)")
    p.add_argument("--rollouts", type=int, default=1, help="rollouts replaying the workload at once")
    p.add_argument("--full-storage", action="store_true")
    p.add_argument("--plain-parse", action="store_true",
                   help="decode engine answers with one orjson.loads (before training/engines/answer_parse.py)")
    p.add_argument("--freeze", action="store_true", help="gc.freeze() once the app is built, as `openforge proxy serve` does")
    p.add_argument("--profile", action="store_true", help="cProfile over the end calls (--http: the whole proxy)")
    p.add_argument("--http", action="store_true", help="the proxy and mock engine as processes, over HTTP")
    p.add_argument("--root", type=Path, default=ROOT, help="--http: the checkout whose proxy runs (e.g. a baseline)")
    p.add_argument("--sort", default="tottime")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args()
    out = asyncio.run(run_http(args) if args.http else run(args))
    prof = out.pop("profile", None)
    for k, v in out.items():
        print(f"{k}: {v}")
    if prof:
        print(prof)
    return 0


if __name__ == "__main__":
    sys.exit(main())
